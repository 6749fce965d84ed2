#!/usr/bin/env bash
# `pvmmu-run --platform xen-host` where a user with a Xen host runs it: in a
# Linux dom0 (Debian's kernel, an initramfs with Xen's toolstack; made by
# tools/make-xen-host.sh) on Debian's Xen 4.17 (tools/fetch-xen.sh), all under
# QEMU's TCG here. dom0's init runs the launcher on a guest
# test, which creates the guest as a domU through libxenlight; with --bench,
# then a benchmark's driver with ARGS (perf/bench_DRIVER.py --platform
# xen-host, DRIVER mprotect by default: what `./pvmmu bench DRIVER --platform xen-host ARGS`
# runs; this host's python3 and the modules the driver loads go into the
# initramfs too); it prints what they said on the console and powers dom0 off.
# This script judges that console.
#
#   xen_host_test.sh --run PVMMU_RUN --source DIR --build DIR [--test NAME]
#                    [--bench ARGS [--driver mprotect|fault]] [--accel tcg|tcg-icount]
#                    [--smp N] [--timeout S]
#
# --accel tcg-icount: QEMU with -icount shift=0,sleep=off (every instruction
# 1 ns), so the benchmark's times count instructions. --smp: the machine's
# CPUs, Xen's pCPUs (default 2: dom0 and a domU side by side). ARGS with --json
# /tmp/bench.json: the file is printed between "xen-host-test: json begin"
# and "... end" lines. KEEP_LOG=FILE keeps the console. Exit: 0 pass, 1 fail, 77 skip (no QEMU, or a Debian package that
# cannot be fetched).
set -uo pipefail

run='' src='' build='' test=tlb-shootdown bench='' driver=mprotect accel=tcg smp=2 limit=600
while (($#)); do
  case $1 in
    --run) run=$2; shift ;;
    --source) src=$2; shift ;;
    --build) build=$2; shift ;;
    --test) test=$2; shift ;;
    --bench) bench=$2; shift ;;
    --driver) driver=$2; shift ;;
    --accel) accel=$2; shift ;;
    --smp) smp=$2; shift ;;
    --timeout) limit=$2; shift ;;
    *) echo "xen_host_test.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
  shift
done
[[ -x $run && -d $src && -d $build ]] ||
  { echo "xen_host_test.sh: --run PVMMU_RUN, --source DIR and --build DIR are needed" >&2; exit 2; }
# Paths as dom0 will see them (the files go into its initramfs at these paths).
run=$(realpath "$run") build=$(realpath "$build") src=$(realpath "$src")
command -v qemu-system-x86_64 >/dev/null || { echo "SKIP: no qemu-system-x86_64"; exit 77; }

xen=$("$src/tools/fetch-xen.sh" "$build/xen")
case $? in 0) ;; 77) echo "SKIP: Xen's package cannot be fetched"; exit 77 ;; *) exit 1 ;; esac
host=$build/xen-host
"$src/tools/make-xen-host.sh" "$host" >/dev/null
case $? in 0) ;; 77) echo "SKIP: a package of the dom0 cannot be fetched"; exit 77 ;; *) exit 1 ;; esac

# What dom0's init runs: the launcher on the test, then on the benchmark.
work=$(mktemp -d)
trap '[[ -n ${KEEP_LOG:-} ]] && cp "$work/console.log" "$KEEP_LOG"; rm -rf "$work"; [[ -n ${qemu:-} ]] && kill "$qemu" 2>/dev/null' EXIT
# The launcher reads a test's needs from its sim program (--info): both go in.
kernel=$("$run" --boot-args "$test" | head -1)
sim=$(find "$build/guest" -name "guest-$test" -type f -perm -u+x | head -1)
[[ -f $kernel && -x $sim ]] || { echo "FAIL: $test's guest kernel or sim program is not built"; exit 1; }
files=("$run" "$kernel" "$sim")
{
  echo "#!/bin/sh"
  echo "$run --platform xen-host --timeout 300 $test"
  echo "echo \"xen-host-test: $test exit \$?\""
  if [[ -n $bench ]]; then
    # The interpreter itself (python3 may be a wrapper, e.g. pyenv's shim).
    py=$(python3 -c 'import os, sys; print(os.path.realpath(sys.executable))') ||
      { echo "SKIP: no python3 for the benchmark's driver"; exit 77; }
    # The interpreter and every module file the driver loads, at their own paths.
    mapfile -t pyfiles < <("$py" - "$src/perf" <<'EOF'
import sys
sys.path.insert(0, sys.argv[1])
import argparse, csv, json, platform, selectors, statistics, subprocess, tempfile  # noqa: F401
import bench_fault, bench_mprotect, guest_bench  # noqa: F401
import os, sysconfig
print(os.path.join(sysconfig.get_paths()["stdlib"], "os.py"))   # where python finds its prefix
for m in list(sys.modules.values()):
    if getattr(m, "__file__", None) and os.path.isfile(m.__file__):
        print(m.__file__)
EOF
)
    files+=("$py" "${pyfiles[@]}" "$build/guest/platform/xenpv/bench/$driver/kernel"
            "$build/guest/bench/$driver/guest-$driver")
    # Its stderr into a file, so it draws no progress line (dom0's console
    # is a terminal); what it says there comes after its table.
    echo "$py $src/perf/bench_$driver.py --build-dir $build --platform xen-host $bench 2>/tmp/driver.err"
    echo "rc=\$?"
    echo "cat /tmp/driver.err"
    # A --json /tmp/bench.json among ARGS comes back on the console too.
    echo "[ -f /tmp/bench.json ] && { echo 'xen-host-test: json begin'; cat /tmp/bench.json; echo 'xen-host-test: json end'; }"
    echo "echo \"xen-host-test: bench exit \$rc\""
    # The timeout: the run is a crash (6) and its domain is gone from xl list.
    if [[ $driver == mprotect ]]; then
      cat >"$work/slow.cfg" <<EOF
name = "slow"
kernel = "$build/guest/platform/xenpv/bench/mprotect/kernel"
memory = 64
extra = "modes=per-pte pages=1024 runs=30"
EOF
      files+=("$work/slow.cfg")
      echo "$run --platform xen-host --timeout 3 --quiet --config $work/slow.cfg"
      echo "echo \"xen-host-test: timeout exit \$?\""
      echo "xl list | sed 's/^/xen-host-test: xl list: /'"
    fi
  fi
} >"$work/run.sh"
image=$("$src/tools/make-xen-host.sh" "$host" --image "dom0-$test.cpio" --run "$work/run.sh" "${files[@]}") ||
  { echo "FAIL: tools/make-xen-host.sh could not make dom0's initramfs"; exit 1; }

# dom0 holds the initramfs in its memory (pvmmu-run's libraries, libvirt's
# among them, and python's): 1 GiB, and the rest of QEMU's for the domUs.
log=$work/console.log
echo "booting: Xen 4.17, dom0 $host/vmlinuz with $image"
start=$SECONDS
icount=()
[[ $accel == tcg-icount ]] && icount=(-icount shift=0,sleep=off)
qemu-system-x86_64 -machine pc -accel tcg "${icount[@]}" -cpu max -smp "$smp" -m 1536 -display none -serial stdio \
  -monitor none \
  -no-reboot -kernel "$xen" -append "console=com1 noreboot dom0_mem=1024M dom0_max_vcpus=1 smap=0" \
  -initrd "$host/vmlinuz console=hvc0 rdinit=/init mitigations=off,$image" >"$log" 2>&1 &
qemu=$!
# dom0's poweroff turns the machine off through ACPI (QEMU exits); where
# Xen gets it first it halts instead (noreboot), and its line ends the run.
ended=timeout
while ((SECONDS - start < limit)); do
  if ! kill -0 "$qemu" 2>/dev/null; then ended='exit'; break; fi
  if grep -Eqs '\(XEN\) (Hardware Dom0|Panic on CPU)' "$log"; then ended=xen; break; fi
  sleep 1
done
kill "$qemu" 2>/dev/null
wait "$qemu" 2>/dev/null
qemu=''
# dom0's console (hvc0) ends its lines with "\r\n".
tr -d '\r' <"$log" >"$log.tmp" && mv "$log.tmp" "$log"
echo "---- console ($((SECONDS - start)) s; Xen's own lines and Linux's kernel lines left out) ----"
grep -Ev '^(\(XEN\)|\[ *[0-9]+\.[0-9]+\])' "$log"
echo "----"

fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
expect() { grep -Eq -- "$1" "$log" || fail "no line matching /$1/ ($2)"; }
expect '^xen-host: dom0 up after .*control_d' "dom0's init ran, with xenfs"
expect '^xen-host: xen_version +: 4\.17' "xl info answered"
expect "^pvmmu-run: xen-host: domain pvmmu-.* is domid [1-9]" "libxenlight created a domU"
expect "^xen-host-test: $test exit 0\$" "the launcher passed $test as a domU"
expect '^pvmmu-run: xen-host: domain powered off' "the domU powered off"
if [[ -n $bench ]]; then
  if [[ $driver == mprotect ]]; then
    expect '^mprotect scaling benchmark on Xen \(this host.s, the guest a domU\)' "the driver ran on xen-host"
    expect '^private +[0-9]+ +per-pte ' "the driver's table has per-pte"
    expect '^xen-host-test: timeout exit 6$' "a run past its --timeout is a crash"
    expect '^xen-host-test: xl list: Domain-0 ' "xl list answered after the timeout"
    if grep -q '^xen-host-test: xl list: pvmmu-' "$log"; then fail "the timed-out domain was not destroyed"; fi
  else
    expect "^page fault and map latency on Xen \\(this host.s, the guest a domU\\)" "the driver ran on xen-host"
  fi
  expect '^xen-host-test: bench exit 0$' "the driver succeeded"
fi
expect '^xen-host: run exit 0$' "dom0's run script ended"
case $ended in
  exit) ;;
  xen) expect '\(XEN\) Hardware Dom0 halted' "dom0 powered off" ;;
  *) fail "the machine still ran after $limit s" ;;
esac
if ((fails)); then
  echo "xen host test: FAILED ($fails checks)"
  exit 1
fi
echo "xen host test: passed"
