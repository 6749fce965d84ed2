#!/usr/bin/env bash
# ./pvmmu bench mprotect on --platform libvirt (perf/guest_bench.py's libvirt
# back end: pvmmu-run --platform libvirt --config): one small cell, which must
# print a row for the platform libvirt-tcg and meet the exact targets (--check:
# one hypercall per 512 PTEs for flag-range, one flush per RW->RO, no A/D bit
# lost), as qemu_bench_mprotect_native does on --platform qemu. Exit 77 (SKIP)
# where pvmmu-run cannot use libvirt.
#
#   libvirt_bench_test.sh SOURCE_DIR BUILD_DIR
set -uo pipefail
src=$1 build=$2
cmd=(python3 "$src/perf/bench_mprotect.py" --build-dir "$build" --platform libvirt --accel tcg --runs 1 --vcpus 1
     --pages 512 --workload private --modes flag-range --epochs 1 --cycles 2 --check)
echo "running: ${cmd[*]}"
out=$("${cmd[@]}" 2>&1)
rc=$?
echo "$out"
if grep -q "SKIP (exit 3)" <<<"$out"; then
  echo "SKIP: pvmmu-run cannot use libvirt here (above), so the libvirt bench was NOT tested."
  exit 77
fi
((rc == 0)) || { echo "FAIL: exit $rc"; exit 1; }
grep -Eq "^platform libvirt-tcg" <<<"$out" || { echo "FAIL: no 'platform libvirt-tcg' line"; exit 1; }
grep -Eq "flag-range" <<<"$out" || { echo "FAIL: no flag-range row"; exit 1; }
echo "libvirt bench: passed"
