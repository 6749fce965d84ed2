#!/usr/bin/env python3
"""TLB-miss cost (seed 000's "wicked" test): the host driver of the
guest program guest/bench/tlb-miss (`./pvmmu bench tlb-miss`).

Every vCPU stores one word per page across far more pages than its TLB holds,
so every access misses and walks. pvmmu protects walks against concurrent
freeing by deferring reuse (the TLB clock), with nothing on the walk path, so
its walk is the unprotected walk; `walk+lock` adds seed 000's scheme, a lock
shared by all vCPUs around every access, for comparison. Reports ns per access
(median of the runs, min, max), TLB misses per access where the platform
counts them (the sim; on bare metal `-`, JSON null), and each variant's
overhead against `walk`. Exit status: 0 done (and, with --check, every exact
target holds), 1 a --check target failed, 2 the run failed.
"""
import argparse
import json
import sys

from guest_bench import (Progress, Unavailable, command_line, common_args, count, make_platform, report_check,
                         run_program, spread, utc_now, vcpu_list, write_json)

VARIANTS = ["hits", "walk", "walk+lock"]
HIT_PAGES = 16   # the guest's `hits` loop; pages must be a multiple of it
SIM_TLB_ENTRIES = 64   # sim::MachineConfig::tlb_entries, the default the benchmark runs with


def summarise(rows, vcpus):
    """One result per variant from the guest's `bench` lines of one run of
    the program. tlb_misses is `-` where the platform cannot count them."""
    out = []
    for v in VARIANTS:
        rs = [r for r in rows if r["variant"] == v]
        med, lo, hi = spread([int(r["ns"]) / int(r["accesses"]) for r in rs])
        accesses = sum(int(r["accesses"]) for r in rs)
        counted = all(r["tlb_misses"] != "-" for r in rs)
        misses = round(sum(int(r["tlb_misses"]) for r in rs) / accesses, 4) if counted else None
        out.append({"variant": v, "vcpus": vcpus, "runs": len(rs), "accesses_per_run": [int(r["accesses"]) for r in rs],
                    "ns_per_access": round(med, 2), "ns_per_access_min": round(lo, 2),
                    "ns_per_access_max": round(hi, 2), "tlb_misses_per_access": misses})
    base = next(r["ns_per_access"] for r in out if r["variant"] == "walk")
    for r in out:
        r["overhead_pct_vs_walk"] = round(100.0 * (r["ns_per_access"] - base) / base, 1) if base else None
    return out


def print_table(doc):
    p = doc["params"]
    print(f"TLB-miss cost on {doc['machine']}, {doc['date']}")
    print(f"platform {doc['platform']}; {p['pages']} pages per vCPU x {p['rounds']} rounds, {p['runs']} runs")
    print(f"{'vCPUs':>5} {'variant':<10} {'ns/access':>10} {'min':>8} {'max':>8} {'misses/access':>14} {'vs walk':>8}")
    for r in doc["results"]:
        misses = "-" if r["tlb_misses_per_access"] is None else f"{r['tlb_misses_per_access']:.4f}"
        vs = "-" if r["overhead_pct_vs_walk"] is None else f"{r['overhead_pct_vs_walk']:+.1f}%"
        print(f"{r['vcpus']:>5} {r['variant']:<10} {r['ns_per_access']:>10.2f} {r['ns_per_access_min']:>8.2f} "
              f"{r['ns_per_access_max']:>8.2f} {misses:>14} {vs:>8}")
    print("\nwalk: pvmmu's walk; its protection against freed tables (reuse deferred until every CPU flushed)\n"
          "adds nothing to the walk path, so it is also the unprotected walk. walk+lock: seed 000's scheme,\n"
          "a lock shared by all vCPUs taken around every access. hits: the same loop inside the TLB.")
    if any(r["tlb_misses_per_access"] is None for r in doc["results"]):
        print("misses/access -: bare metal has no TLB-miss counter (the hardware walks; under TCG, QEMU's\n"
              "software TLB refills, which the guest cannot see).")


def check(doc):
    """The exact targets (never timings). Returns failures."""
    p, bad = doc["params"], []
    counted = doc["platform"] == "sim"
    for v in p["vcpus"]:
        for variant in VARIANTS:
            rs = [r for r in doc["results"] if r["vcpus"] == v and r["variant"] == variant]
            name = f"{variant} {v} vCPUs"
            if len(rs) != 1 or rs[0]["runs"] != p["runs"]:
                bad.append(f"{name}: {sum(r['runs'] for r in rs)} runs (asked: {p['runs']})")
                continue
            want = v * p["pages"] * p["rounds"]
            if any(a != want for a in rs[0]["accesses_per_run"]):
                bad.append(f"{name}: accesses {rs[0]['accesses_per_run']} (designed: {want} each)")
            if (rs[0]["tlb_misses_per_access"] is not None) != counted:
                bad.append(f"{name}: misses/access {rs[0]['tlb_misses_per_access']} on {doc['platform']} "
                           f"({'a count' if counted else 'null: no counter'} expected)")
            elif counted and p["pages"] >= 4 * SIM_TLB_ENTRIES:
                # The sim's TLB: walk's pages cannot stay in it, hits' do
                # (a miss each the first time, a few evictions by the walks).
                m = rs[0]["tlb_misses_per_access"]
                if variant != "hits" and m < 0.95:
                    bad.append(f"{name}: misses/access {m}: the pages stayed in the TLB")
                if variant == "hits" and m > 0.1:
                    bad.append(f"{name}: misses/access {m}: the {HIT_PAGES} pages did not stay in the TLB")
    return bad


def main():
    ap = argparse.ArgumentParser(prog="pvmmu bench tlb-miss", description=__doc__.split("\n\n")[1],
                                 epilog="Exit status: 0 done, 1 a --check target failed, 2 the run failed.")
    common_args(ap)
    ap.add_argument("--vcpus", type=vcpu_list(4), default=[2],
                    help="vCPU counts, comma-separated, each 1..4 (default 2)")
    ap.add_argument("--pages", type=int, default=4096,
                    help=f"pages per vCPU (a multiple of {HIT_PAGES}; default 4096; the domain's 80 MiB holds "
                         "4 vCPUs x 4096)")
    ap.add_argument("--rounds", type=count(), default=8, help="passes over the pages per run (default 8)")
    ap.add_argument("--check", action="store_true",
                    help="check the exact targets (runs, accesses, misses counted only on the sim; with --json, "
                         "in the file written); exit 1 if one fails")
    opts = ap.parse_args()
    if opts.pages < HIT_PAGES or opts.pages % HIT_PAGES:
        ap.error(f"--pages must be a positive multiple of {HIT_PAGES}")
    if len(opts.platform) != 1:
        ap.error("--platform: tlb-miss runs on one platform at a time")
    plat = make_platform(opts.platform[0], opts.build_dir, opts.accel)
    doc = {"platform": plat.name, "machine": plat.machine(), "date": utc_now(),
           "command": command_line("tlb-miss"),
           "params": {"vcpus": opts.vcpus, "pages": opts.pages, "rounds": opts.rounds, "runs": opts.runs},
           "results": []}
    progress = Progress(len(opts.vcpus))
    try:
        for v in opts.vcpus:
            rows = run_program(plat, "tlb-miss", v,
                               [f"pages={opts.pages}", f"rounds={opts.rounds}", f"runs={opts.runs}"], progress,
                               f"{v} vCPU{'s' if v != 1 else ''}", opts.runs * len(VARIANTS))
            doc["results"] += summarise(rows, v)
    except (Unavailable, RuntimeError, OSError) as e:
        progress.end()
        print(f"pvmmu bench tlb-miss: {e}", file=sys.stderr)
        return 2
    progress.end()
    print_table(doc)
    if opts.json:
        write_json(opts.json, doc)
    if opts.check:
        # What was written is what is checked.
        if opts.json:
            with open(opts.json) as f:
                doc = json.load(f)
        return report_check(check(doc), len(doc["results"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
