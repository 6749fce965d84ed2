#!/bin/bash
# Instructions per PTE of the guest library's change_pte_range on the sim, for
# atomic-array and flag-range (docs/results.md §2c). callgrind collects only
# inside change_pte_range (one vCPU, private workload, 2 mprotects of 512 pages
# per cycle); the Memory accessor (SimCpu load/store/direct) and the
# hypercall (the sim's copy plus the core) are split out by their inclusive cost.
#   perf/guest-side-count.sh [GUEST_MPROTECT_BINARY]   (default build/guest/bench/mprotect/guest-mprotect)
set -euo pipefail
bin=${1:-build/guest/bench/mprotect/guest-mprotect}
[[ -x $bin ]] || { echo "guest-side-count.sh: $bin is not built (./pvmmu build)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '%-13s %6s %9s %13s %15s %7s %11s\n' mode ptes total library-only library+memory memory hypervisor
for mode in atomic-array flag-range; do
    out=$tmp/cg.$mode
    valgrind --tool=callgrind --callgrind-out-file="$out" --toggle-collect='pvmmu::guest::change_pte_range*' \
        "$bin" --cpus 1 workload=private pages=512 runs=1 epochs=1 cycles=2 "modes=$mode" > "$out.log" 2>&1 ||
        { cat "$out.log" >&2; exit 2; }
    ptes=$(grep -o 'ptes=[0-9]*' "$out.log" | cut -d= -f2)
    # From $tmp: inside the source tree callgrind_annotate lists some functions twice.
    # --threshold=100: every function, not only those making up 99 % of the cost.
    (cd "$tmp" && callgrind_annotate --inclusive=yes --auto=no --threshold=100 "$out" 2>/dev/null > "$out.txt")
    incl() { grep -v '=>' "$out.txt" | grep -E "$1" | awk '{gsub(",","",$1); s+=$1} END {print s+0}'; }
    total=$(incl 'PROGRAM TOTALS')
    mem=$(incl 'thunk to pvmmu::guest::simplat::SimCpu::(load|store|direct|cmpxchg|clean)\(')
    hc=$(incl 'SimCpu::hypercall\(')
    awk -v m="$mode" -v p="$ptes" -v t="$total" -v mem="$mem" -v hc="$hc" 'BEGIN {
        printf "%-13s %6d %9.1f %13.1f %15.1f %7.1f %11.1f\n", m, p, t/p, (t-mem-hc)/p, (t-hc)/p, mem/p, hc/p }'
done
