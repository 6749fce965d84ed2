#!/usr/bin/env python3
"""Page-fault and map latency (lmbench's lat_pagefault and lat_mmap,
seed 004): the host driver of the guest program guest/bench/fault
(`./pvmmu bench fault`).

Each run maps anonymous memory in a fresh address space, touches every page
once (one demand-zero fault each) and tears the space down. Reported, once
with a TLB that caches only successful walks and once with one that also
caches failed walks (--tlb-caches-invalid on the sim): µs per fault, µs per
map (the whole cycle), faults and spurious faults per page, and the TLB flush
operations: fixes of spurious faults, preventive flushes of new mappings (must
be 0), and teardown flushes. Several platforms (--platform xen,qemu) run the
same guest kernel on each, one row per hypervisor; under --accel tcg-icount
the times are instructions (1 ns each). Exit status: 0 done, 1 a preventive
flush was seen, 2 the run failed.
"""
import argparse
import sys

from guest_bench import (Progress, Unavailable, command_line, common_args, count, make_platform, run_program,
                         spread, utc_now, write_json)

TLBS = [("tlb caches valid only", []), ("tlb caches invalid", ["--tlb-caches-invalid"])]


def main():
    ap = argparse.ArgumentParser(prog="pvmmu bench fault", description=__doc__.split("\n\n")[1])
    common_args(ap)
    ap.add_argument("--pages", type=count(4096), default=1024, help="pages mapped and touched per run (1..4096, default 1024)")
    opts = ap.parse_args()
    doc = {"platform": None, "machine": None, "date": utc_now(),
           "command": command_line("fault"),
           "params": {"pages": opts.pages, "runs": opts.runs}, "results": []}
    # x86's TLBs hold no invalid translation, and the flag is the sim's: on
    # bare metal only the first variant exists.
    runs = [(p, name, flags) for p in opts.platform for name, flags in (TLBS if p == "sim" else TLBS[:1])]
    progress = Progress(len(runs))
    names, machines = [], []
    try:
        for p, name, flags in runs:
            plat = make_platform(p, opts.build_dir, opts.accel, flags)
            if plat.name not in names:
                names.append(plat.name)
                machines.append(plat.machine())
            doc["platform"], doc["machine"] = ",".join(names), "; ".join(machines)
            rows = run_program(plat, "fault", 1, [f"pages={opts.pages}", f"runs={opts.runs}"], progress,
                               f"{plat.name}: {name}", opts.runs)
            total = lambda k: sum(int(r[k]) for r in rows)
            fault = spread([int(r["fault_ns"]) / 1000 for r in rows])
            mapping = spread([int(r["map_ns"]) / 1000 for r in rows])
            pages = opts.pages * len(rows)
            doc["results"].append({
                "hypervisor": plat.hypervisor, "tlb": name, "us_per_fault": round(fault[0], 3), "us_per_fault_min": round(fault[1], 3),
                "us_per_fault_max": round(fault[2], 3), "us_per_map": round(mapping[0], 1),
                "us_per_map_min": round(mapping[1], 1), "us_per_map_max": round(mapping[2], 1),
                "faults_per_page": round(total("faults") / pages, 3),
                "spurious_per_page": round(total("spurious") / pages, 3),
                "fix_flushes": total("fix_flushes"), "preventive_flushes": total("preventive_flushes"),
                "teardown_flushes": total("teardown_flushes"), "pages": pages})
    except (Unavailable, RuntimeError, OSError) as e:
        progress.end()
        print(f"pvmmu bench fault: {e}", file=sys.stderr)
        return 2
    progress.end()
    print(f"page fault and map latency on {doc['machine']}, {doc['date']}")
    print(f"platform {doc['platform']}; {opts.pages} pages per map, {opts.runs} runs (medians, [min-max])")
    several = len(opts.platform) > 1
    hv = f"{'hypervisor':<10} " if several else ""
    print(f"{hv}{'TLB':<22} {'us/fault':>18} {'us/map':>22} {'faults/page':>11} {'spurious/page':>13} "
          f"{'fix':>6} {'preventive':>10} {'teardown':>8}")
    for r in doc["results"]:
        hv = f"{r['hypervisor']:<10} " if several else ""
        print(f"{hv}{r['tlb']:<22} {r['us_per_fault']:>6.2f} [{r['us_per_fault_min']:.2f}-{r['us_per_fault_max']:.2f}] "
              f"{r['us_per_map']:>8.0f} [{r['us_per_map_min']:.0f}-{r['us_per_map_max']:.0f}] "
              f"{r['faults_per_page']:>11.2f} {r['spurious_per_page']:>13.2f} {r['fix_flushes']:>6} "
              f"{r['preventive_flushes']:>10} {r['teardown_flushes']:>8}")
    if opts.accel == "tcg-icount" and opts.platform != ["sim"]:
        print("\nunder tcg-icount 1 us of the guest's clock is 1000 instructions (guest and hypervisor)", end="")
    print("\nfix: local INVLPGs that fixed spurious faults; preventive: flushes of new mappings (seed 004: 0);\n"
          "teardown: flushes when an address space is destroyed (its tables are freed).")
    if opts.json:
        write_json(opts.json, doc)
    return 1 if any(r["preventive_flushes"] for r in doc["results"]) else 0


if __name__ == "__main__":
    sys.exit(main())
