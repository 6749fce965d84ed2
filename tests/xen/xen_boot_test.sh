#!/usr/bin/env bash
# Boots Xen 4.17 (Debian's, tools/fetch-xen.sh) under QEMU's TCG with a guest
# kernel as dom0 and checks what the console says (issue 13).
#
#   xen_boot_test.sh --xen-dir DIR --kernel KERNEL [--words W] [--cpus N]
#                    [--timeout S] --passed WHO
#
# DIR holds Xen's image, fetched there first if it is not (tools/fetch-xen.sh).
# W goes on dom0's module string (its command line, start_info.cmd_line).
# Xen does not power QEMU off when dom0 ends ("noreboot": it halts), so the
# run ends at Xen's "Hardware Dom0 ..." line, or fails at the timeout. The
# guest must print "WHO: all checks passed" and shut down with poweroff
# (Xen: "Hardware Dom0 halted"), and Xen's loader must have built dom0 from
# the kernel's notes. Exit: 0 pass, 1 fail, 77 skip (no QEMU, or no Xen image
# because the package could not be fetched).
set -uo pipefail

dir='' kernel='' words='' cpus=1 limit=90 who=''
while (($#)); do
  case $1 in
    --words) words=$2; shift ;;
    --xen-dir) dir=$2; shift ;;
    --kernel) kernel=$2; shift ;;
    --cpus) cpus=$2; shift ;;
    --timeout) limit=$2; shift ;;
    --passed) who=$2; shift ;;
    *) echo "xen_boot_test.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
  shift
done
[[ -f $kernel && -n $who ]] || { echo "xen_boot_test.sh: --kernel FILE and --passed WHO are needed" >&2; exit 2; }
QEMU=${QEMU:-qemu-system-x86_64}
command -v "$QEMU" >/dev/null || { echo "SKIP: $QEMU is not installed (./pvmmu deps)"; exit 77; }
xen=$("$(dirname "$0")/../../tools/fetch-xen.sh" "$dir")
case $? in
  0) ;;
  77) echo "SKIP: tools/fetch-xen.sh could not fetch xen-hypervisor-4.17-amd64 (above)"; exit 77 ;;
  *) echo "FAIL: tools/fetch-xen.sh failed"; exit 1 ;;
esac

log=$(mktemp)
trap 'rm -f "$log"; [[ -n ${pid:-} ]] && kill "$pid" 2>/dev/null' EXIT
cmd=("$QEMU" -accel tcg -machine pc -cpu max -smp "$cpus" -m 512 -kernel "$xen"
     -append "console=com1 noreboot dom0_mem=64M dom0_max_vcpus=$cpus loglvl=all guest_loglvl=all"
     -initrd "$kernel${words:+ $words}" -display none -serial "file:$log" -monitor none -no-reboot)
echo "running: ${cmd[*]}"
"${cmd[@]}" </dev/null >/dev/null 2>&1 &
pid=$!
start=$SECONDS ended=0
while ((SECONDS - start < limit)) && kill -0 "$pid" 2>/dev/null; do
  if grep -q '^(XEN) Hardware Dom0 ' "$log"; then ended=1; break; fi
  sleep 0.5
done
kill "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
pid=
tr -d '\r' <"$log" >"$log.txt" && mv "$log.txt" "$log"
echo "---- console (after $((SECONDS - start)) s; Xen's memory and CPU lines left out) ----"
grep -Ev '^\(XEN\)  ' "$log"
echo "----"

fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
expect() { grep -Eq -- "$1" "$log" || fail "no line matching /$1/ ($2)"; }
((ended)) || fail "Xen did not report dom0's end within ${limit}s"
expect '^\(XEN\) Xen version 4\.17' "Xen 4.17 booted"
expect '^\(XEN\) \*\*\* Building a PV Dom0 \*\*\*$' "Xen's loader took the kernel"
expect "^$who: all checks passed\$" "every check of the guest passed"
expect '^\(XEN\) Hardware Dom0 halted' "dom0 powered off"
if ((fails)); then
  echo "xen boot test: FAILED ($fails checks)"
  exit 1
fi
echo "xen boot test: passed"
