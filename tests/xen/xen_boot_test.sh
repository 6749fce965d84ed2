#!/usr/bin/env bash
# Boots a guest kernel as dom0 of Xen 4.17 (Debian's, tools/fetch-xen.sh)
# under QEMU's TCG through the launcher, `pvmmu-run --platform xen --config`,
# and checks what the console says.
#
#   xen_boot_test.sh --run PVMMU_RUN --kernel KERNEL [--words W] [--cpus N]
#                    [--timeout S] --passed WHO
#
# W goes on dom0's module string (the domain's `extra`: start_info.cmd_line).
# The launcher fetches Xen's image when it is missing, ends the run at Xen's
# "Hardware Dom0 ..." line and exits 0 when dom0 powered off, 3 when it cannot
# run (no QEMU, or no Xen image because the package could not be fetched).
# Besides, the guest must print "WHO: all checks passed" and Xen's loader must
# have built dom0 from the kernel's notes. Exit: 0 pass, 1 fail, 77 skip.
set -uo pipefail

run='' kernel='' words='' cpus=1 limit=90 who=''
while (($#)); do
  case $1 in
    --run) run=$2; shift ;;
    --words) words=$2; shift ;;
    --kernel) kernel=$2; shift ;;
    --cpus) cpus=$2; shift ;;
    --timeout) limit=$2; shift ;;
    --passed) who=$2; shift ;;
    *) echo "xen_boot_test.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
  shift
done
[[ -x $run && -f $kernel && -n $who ]] ||
  { echo "xen_boot_test.sh: --run PVMMU_RUN, --kernel FILE and --passed WHO are needed" >&2; exit 2; }

cfg=$(mktemp --suffix=.cfg) log=$(mktemp)
trap 'rm -f "$cfg" "$log"' EXIT
{
  echo "name = \"dom0\""
  echo "kernel = \"$kernel\""
  echo "vcpus = $cpus"
  echo "memory = 64"
  if [[ -n $words ]]; then echo "extra = \"$words\""; fi
} >"$cfg"
echo "running: $run --platform xen --timeout $limit --config $cfg"
"$run" --platform xen --timeout "$limit" --config "$cfg" >"$log" 2>&1
rc=$?
echo "---- console (Xen's memory and CPU lines left out) ----"
grep -Ev '^\(XEN\)  ' "$log"
echo "----"
if ((rc == 3)); then echo "SKIP: the launcher cannot run Xen here (above)"; exit 77; fi

fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
expect() { grep -Eq -- "$1" "$log" || fail "no line matching /$1/ ($2)"; }
((rc == 0)) || fail "the launcher says dom0 did not power off (exit $rc)"
expect '^\(XEN\) Xen version 4\.17' "Xen 4.17 booted"
expect '^\(XEN\) \*\*\* Building a PV Dom0 \*\*\*$' "Xen's loader took the kernel"
expect "^$who: all checks passed\$" "every check of the guest passed"
expect '^\(XEN\) Hardware Dom0 halted' "dom0 powered off"
if ((fails)); then
  echo "xen boot test: FAILED ($fails checks)"
  exit 1
fi
echo "xen boot test: passed"
