#!/usr/bin/env python3
"""The mprotect scaling benchmark (docs/design.md §7): the host driver.

Runs the guest program guest/bench/mprotect once per (workload, vCPU count) on
a platform, reads its `bench ...` console lines (one per mode and run; every
mode measured in the same domain, run by run), and reports per (mode, workload,
vCPUs): PTE updates/s (median of the runs, min, max), % of native (the median
of `native` in the same guest run), hypercalls per 512 PTEs, TLB flushes per
mprotect (local, remote), spurious faults, cmpxchg retries and A/D bits lost;
under --accel tcg-icount also instructions per PTE update. With several
platforms (--platform xen,qemu) the same guest kernel runs on each, and a
second table puts the hypervisors side by side per mode.

Exit status: 0 done (and, with --check, every exact target holds), 1 a --check
target failed, 2 the run itself failed (bad arguments, a guest that did not
succeed, a platform that is not available).
"""
import argparse
import csv
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

from guest_bench import (Progress, Unavailable, command_line, common_args, count, make_platform, run_program,
                         name_list, report_check, utc_now, vcpu_list, write_json)
import sweep

MODES = ["native", "per-pte", "linux-xen", "atomic-array", "flag-range", "unsafe"]
WORKLOADS = ["private", "shared"]
ENTRIES_PER_L1 = 512


def summarise(rows, workload, vcpus, plat):
    """Results per mode from one guest run's lines."""
    by_mode = {}
    for r in rows:
        by_mode.setdefault(r["mode"], []).append(r)
    medians = {}
    results = []
    for mode, rs in by_mode.items():
        rates = [int(r["ptes"]) / (int(r["ns"]) / 1e9) for r in rs if int(r["ns"]) > 0]
        total = lambda k: sum(int(r[k]) for r in rs)
        ptes, mprotects = total("ptes"), total("mprotects")
        medians[mode] = statistics.median(rates) if rates else 0.0
        retries = None if any(r["retries"] == "na" for r in rs) else total("retries")
        # Under -icount every guest instruction is 1 ns: ns per PTE counts them.
        per_pte = [int(r["ns"]) / int(r["ptes"]) for r in rs if int(r["ptes"]) > 0]
        results.append({
            "hypervisor": plat.hypervisor, "platform": plat.name,
            "mode": mode, "workload": workload, "vcpus": vcpus,
            "pte_updates_per_s": round(medians[mode]),
            "pte_updates_per_s_min": round(min(rates)) if rates else 0,
            "pte_updates_per_s_max": round(max(rates)) if rates else 0,
            "pct_of_native": None,
            "instructions_per_pte": round(statistics.median(per_pte), 1)
            if per_pte and getattr(plat, "accel", "") == "tcg-icount" else None,
            "hypercalls_per_512_ptes": round(total("update_calls") * ENTRIES_PER_L1 / ptes, 3) if ptes else None,
            "multicalls": total("multicalls"), "update_calls": total("update_calls"),
            "tlb_flushes_local_per_mprotect": round(total("flush_local") / mprotects, 4) if mprotects else None,
            "tlb_flushes_remote_per_mprotect": round(total("flush_remote") / mprotects, 4) if mprotects else None,
            "spurious_faults": total("spurious"),
            "cmpxchg_retries": retries,
            "ad_lost": total("ad_lost"),
            "ad_checked": total("ad_checked"),
            "runs": len(rs), "mprotects": mprotects, "pte_updates": ptes,
        })
    native = medians.get("native")
    for r in results:
        if native:
            r["pct_of_native"] = round(100.0 * medians[r["mode"]] / native, 1)
    results.sort(key=lambda r: MODES.index(r["mode"]))
    return results


def multi(doc):
    return len(doc["platforms"]) > 1


def fmt_rate(x):
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if x >= scale:
            return f"{x / scale:.2f}{unit}"
    return f"{x:.0f}"


def print_table(doc, out):
    print(f"mprotect scaling benchmark on {doc['machine']}, {doc['date']}", file=out)
    p = doc["params"]
    print(f"platform {doc['platform']}; {p['pages']} pages per region, {p['runs']} runs x {p['epochs']} epochs "
          f"x {p['cycles']} RW->RO->RW cycles{'; --interleave' if p.get('interleave') else ''}", file=out)
    for note in doc.get("notes", []):
        print(note, file=out)
    icount = any(r["instructions_per_pte"] is not None for r in doc["results"])
    hv = f"{'hypervisor':<10} " if multi(doc) else ""
    ipp = f"{'instr/PTE':>9} " if icount else ""
    head = (f"{hv}{'workload':<8} {'vCPUs':>5} {'mode':<12} {'updates/s':>10} {'min':>9} {'max':>9} {'%native':>8} "
            f"{ipp}{'hc/512':>7} {'fl.loc':>6} {'fl.rem':>6} {'spurious':>8} {'retries':>8} {'A/D lost':>14}")
    print(head, file=out)
    print("-" * len(head), file=out)
    last = None
    for r in doc["results"]:
        key = (r["hypervisor"], r["workload"], r["vcpus"])
        if last and key != last:
            print(file=out)
        last = key
        pct = "-" if r["pct_of_native"] is None else f"{r['pct_of_native']:.1f}"
        hc = "-" if r["hypercalls_per_512_ptes"] is None else f"{r['hypercalls_per_512_ptes']:g}"
        retries = "-" if r["cmpxchg_retries"] is None else str(r["cmpxchg_retries"])
        ipp = f"{r['instructions_per_pte']:>9.1f} " if icount else ""
        hv = f"{r['hypervisor']:<10} " if multi(doc) else ""
        print(f"{hv}{r['workload']:<8} {r['vcpus']:>5} {r['mode']:<12} {fmt_rate(r['pte_updates_per_s']):>10} "
              f"{fmt_rate(r['pte_updates_per_s_min']):>9} {fmt_rate(r['pte_updates_per_s_max']):>9} {pct:>8} "
              f"{ipp}{hc:>7} {r['tlb_flushes_local_per_mprotect']:>6g} {r['tlb_flushes_remote_per_mprotect']:>6g} "
              f"{r['spurious_faults']:>8} {retries:>8} {str(r['ad_lost']) + ' of ' + str(r['ad_checked']):>14}",
              file=out)
    print("\nupdates/s: PTE updates per second, median of the runs; %native: against native in the same guest run;\n"
          + ("instr/PTE: guest and hypervisor instructions per PTE update (tcg-icount: 1 instruction = 1 ns), median;\n"
             if icount else "") +
          "hc/512: hypercalls that update PTEs per 512 PTEs (linux-xen's: multicalls of one mmu_update each);\n"
          "fl.loc/fl.rem: TLB flush operations per mprotect;\n"
          "retries: cmpxchg rounds lost to a hardware A/D update: the guest's own loop (native), the hypervisor's\n"
          "install loops (the rest; '-' where the platform cannot tell);\n"
          "A/D lost: Accessed/Dirty bits the writers caused that are neither in the PTE nor handed back.",
          file=out)


BATCHED = ["linux-xen", "atomic-array", "flag-range"]


def comparison(doc):
    """pvmmu next to Xen: per (workload, vCPUs, mode) the cost per PTE update on
    each (instructions under tcg-icount, else ns) and Xen's over pvmmu's; then
    the targets of docs/results.md §9. [] unless both hypervisors ran."""
    by = {(r["hypervisor"], r["workload"], r["vcpus"], r["mode"]): r for r in doc["results"]}
    if {r["hypervisor"] for r in doc["results"]} != {"pvmmu", "xen"}:
        return [], []
    icount = all(r["instructions_per_pte"] is not None for r in doc["results"])
    cost = (lambda r: r["instructions_per_pte"]) if icount else (lambda r: 1e9 / r["pte_updates_per_s"])
    rows, targets = [], []
    for wl, v in sorted({(k[1], k[2]) for k in by}, key=lambda k: (WORKLOADS.index(k[0]), k[1])):
        for mode in MODES:
            p, x = by.get(("pvmmu", wl, v, mode)), by.get(("xen", wl, v, mode))
            if p or x:
                rows.append({"workload": wl, "vcpus": v, "mode": mode, "pvmmu": cost(p) if p else None,
                             "xen": cost(x) if x else None,
                             "xen_over_pvmmu": round(cost(x) / cost(p), 2) if p and x else None})
        xen_batched = [cost(by[k]) for k in (("xen", wl, v, m) for m in BATCHED) if k in by]
        fr, arr = by.get(("pvmmu", wl, v, "flag-range")), by.get(("pvmmu", wl, v, "atomic-array"))
        xarr = by.get(("xen", wl, v, "atomic-array"))
        name = f"{wl}, {v} vCPU{'s' if v != 1 else ''}"
        if fr and xen_batched:
            r = min(xen_batched) / cost(fr)
            targets.append((r >= 5, f"{name}: pvmmu's flag-range {r:.2f}x fewer than Xen's best batched mode (>= 5x)"))
        if arr and xarr:
            r = cost(xarr) / cost(arr)
            targets.append((r >= 4, f"{name}: pvmmu's cmd-2 array {r:.2f}x fewer than Xen's (>= 4x)"))
        slower = [m for m in MODES if ("pvmmu", wl, v, m) in by and ("xen", wl, v, m) in by
                  and cost(by[("pvmmu", wl, v, m)]) > cost(by[("xen", wl, v, m)])]
        targets.append((not slower, f"{name}: no mode slower on pvmmu than on Xen"
                        + (f" (slower: {', '.join(slower)})" if slower else "")))
    return rows, targets


def print_comparison(doc, out):
    rows, targets = comparison(doc)
    if not rows:
        return
    icount = all(r["instructions_per_pte"] is not None for r in doc["results"])
    unit = "instructions per PTE update" if icount else "ns per PTE update (wall clock: use --accel tcg-icount)"
    print(f"\npvmmu and Xen 4.17 side by side, {unit}:", file=out)
    head = f"{'workload':<8} {'vCPUs':>5} {'mode':<12} {'pvmmu':>10} {'Xen 4.17':>10} {'Xen/pvmmu':>9}"
    print(head, file=out)
    print("-" * len(head), file=out)
    num = lambda x: "-" if x is None else f"{x:.1f}"
    for r in rows:
        ratio = "-" if r["xen_over_pvmmu"] is None else f"{r['xen_over_pvmmu']:.2f}"
        print(f"{r['workload']:<8} {r['vcpus']:>5} {r['mode']:<12} {num(r['pvmmu']):>10} {num(r['xen']):>10} "
              f"{ratio:>9}", file=out)
    print("('-': the mode needs what that hypervisor lacks: native and unsafe pvmmu's unsafe-native-pt window, "
          "flag-range its cmd 4)", file=out)
    print("targets:", file=out)
    for ok, what in targets:
        print(f"  {'met ' if ok else 'MISS'} {what}", file=out)


def write_csv(doc, path):
    hvs = [h for h in ("pvmmu", "xen") if any(r["hypervisor"] == h for r in doc["results"])]
    cols = [(h, w, m) for h in hvs for w in WORKLOADS for m in MODES
            if any((r["hypervisor"], r["workload"], r["mode"]) == (h, w, m) for r in doc["results"])]
    tasks = sorted({r["vcpus"] for r in doc["results"]})
    rate = {(r["hypervisor"], r["workload"], r["mode"], r["vcpus"]): r["pte_updates_per_s"] for r in doc["results"]}
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["tasks"] + [f"{h}_{wl}_{m}" if multi(doc) else f"{wl}_{m}" for h, wl, m in cols])
        for t in tasks:
            w.writerow([t] + [rate.get((h, wl, m, t), "") for h, wl, m in cols])


def write_plot(doc, path):
    if not shutil.which("gnuplot"):
        raise Unavailable("gnuplot is not installed (apt-get install gnuplot-nox; it is in tools/deps.txt)")
    workloads = [w for w in WORKLOADS if any(r["workload"] == w for r in doc["results"])]
    series = [(h, m) for h in ("pvmmu", "xen") for m in MODES
              if any((r["hypervisor"], r["mode"]) == (h, m) for r in doc["results"])]
    svg = path.endswith(".svg")
    with tempfile.TemporaryDirectory() as tmp:
        script = [f"set terminal {'svg size 1000,460 dynamic' if svg else 'pngcairo size 1000,460'} font 'sans,10'",
                  f"set output '{path}'",
                  f"set multiplot layout 1,{len(workloads)} title "
                  f"'mprotect: PTE updates/s against vCPUs ({doc['platform']}, {doc['date'][:10]})'",
                  "set logscale y", "set key below horizontal", "set grid",
                  "set xlabel 'vCPUs'", "set ylabel 'PTE updates/s (median)'"]
        for wl in workloads:
            plots = []
            for h, m in series:
                data = os.path.join(tmp, f"{h}-{wl}-{m}.dat")
                with open(data, "w") as f:
                    for r in doc["results"]:
                        if (r["hypervisor"], r["workload"], r["mode"]) == (h, wl, m):
                            f.write(f"{r['vcpus']} {r['pte_updates_per_s']} "
                                    f"{r['pte_updates_per_s_min']} {r['pte_updates_per_s_max']}\n")
                title = f"{h} {m}" if multi(doc) else m
                plots.append(f"'{data}' using 1:2:3:4 with yerrorlines title '{title}'")
            vcpus = sorted({r["vcpus"] for r in doc["results"]})
            script.append("set xtics (" + ", ".join(str(v) for v in vcpus) + ")")
            script.append(f"set title '{wl}'")
            script.append("plot " + ", ".join(plots))
        script.append("unset multiplot")
        r = subprocess.run(["gnuplot"], input="\n".join(script) + "\n", capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"gnuplot failed:\n{r.stderr}")


def check(doc):
    """The exact targets of the benchmark (counts, never timings). Returns failures."""
    bad = []
    batch = doc["params"].get("batch") or ENTRIES_PER_L1
    expect_hc = {"native": 0, "per-pte": 1024, "linux-xen": -(-ENTRIES_PER_L1 // 31),
                 "atomic-array": -(-ENTRIES_PER_L1 // batch),
                 "flag-range": 1, "unsafe": 1}
    full_l1s = doc["params"]["pages"] % ENTRIES_PER_L1 == 0
    for r in doc["results"]:
        name = f"{r['mode']} {r['workload']} {r['vcpus']} vCPUs"
        hc = r["hypercalls_per_512_ptes"]
        if r["mode"] == "flag-range" and hc > 1:
            bad.append(f"{name}: {hc} hypercalls per 512 PTEs (target <= 1)")
        if full_l1s and hc != expect_hc[r["mode"]]:
            bad.append(f"{name}: {hc} hypercalls per 512 PTEs (designed: {expect_hc[r['mode']]})")
        # linux-xen wraps every mmu_update in a multicall; no other mode uses one.
        want_mc = r["update_calls"] if r["mode"] == "linux-xen" else 0
        if r["multicalls"] != want_mc:
            bad.append(f"{name}: {r['multicalls']} multicalls for {r['update_calls']} mmu_updates (designed: {want_mc})")
        if r["mode"] != "unsafe" and r["ad_lost"] != 0:
            bad.append(f"{name}: {r['ad_lost']} A/D bits lost (target 0)")
        if r["mode"] == "unsafe" and r["workload"] == "shared" and r["vcpus"] > 1 and r["ad_lost"] == 0:
            bad.append(f"{name}: no A/D bit lost (the accounting must see unsafe's loss)")
        # One flush per RW->RO (half the calls), none per raise: local while the
        # caller is the only vCPU in the address space, remote otherwise.
        local, remote = (0.5, 0.0) if r["vcpus"] == 1 else (0.0, 0.5)
        if (r["tlb_flushes_local_per_mprotect"], r["tlb_flushes_remote_per_mprotect"]) != (local, remote):
            bad.append(f"{name}: flushes per mprotect local {r['tlb_flushes_local_per_mprotect']} remote "
                       f"{r['tlb_flushes_remote_per_mprotect']} (designed: {local} / {remote})")
    # Side by side (instruction counts, never timings): the targets of
    # docs/results.md §9,
    # which are set for whole-L1 batches.
    if all(r["instructions_per_pte"] is not None for r in doc["results"]) and not doc["params"].get("batch"):
        bad += [what for ok, what in comparison(doc)[1] if not ok]
    return bad


def host_list(s):
    """An argparse type: comma-separated libvirt URIs, each once."""
    v = [x for x in s.split(",") if x]
    if not v or len(set(v)) != len(v):
        raise argparse.ArgumentTypeError("one or more libvirt URIs, comma-separated, each once")
    return v


def run_hosts(opts, workloads):
    """--hosts: the sweep (perf/sweep.py), one guest run per (workload, vCPUs,
    mode) cell, each with the words a single-host run gives its modes."""
    cells = [(wl, v, m) for wl in workloads for v in opts.vcpus for m in opts.modes]

    def cell_args(cell, plat):
        wl, _, mode = cell
        args = [f"workload={wl}", f"pages={opts.pages}", f"runs={opts.runs}", f"epochs={opts.epochs}",
                f"cycles={opts.cycles}", f"modes={mode}"]
        if mode == "native":
            args += plat.native_args
        return args + ([f"batch={opts.batch}"] if opts.batch else [])

    try:
        doc = sweep.run_sweep(opts, cells, cell_args, summarise)
        doc["command"] = command_line("mprotect")
        doc["params"] = {"pages": opts.pages, "runs": opts.runs, "epochs": opts.epochs, "cycles": opts.cycles,
                         "batch": opts.batch, "per_host": opts.per_host, "every_host": opts.every_host}
        if opts.json:
            write_json(opts.json, doc)
        if opts.csv:
            sweep.write_csv(doc, opts.csv)
        if opts.plot:
            sweep.write_plot(doc, opts.plot)
    except (Unavailable, RuntimeError, OSError) as e:
        print(f"pvmmu bench mprotect: {e}", file=sys.stderr)
        return 2
    sweep.print_table(doc, sys.stdout, fmt_rate)
    if opts.check:
        bad = check(doc) + [f"{r['host']}: {r['workload']} {r['vcpus']} vCPUs {r['mode']}: the cell failed"
                            for r in doc["failed"]]
        return report_check(bad, len(doc["results"]))
    # A failed cell is a failed run (exit 2), after the table that names it.
    return 2 if doc["failed"] or not doc["results"] else 0


def main():
    ap = argparse.ArgumentParser(
        prog="pvmmu bench mprotect",
        description="The mprotect scaling benchmark (docs/design.md §7): every update mode, per workload and vCPU count. "
                    "Without options: the sim, 1, 2 and 4 vCPUs, both workloads, all modes (about a minute).",
        epilog=f"modes: {', '.join(MODES)} (on --platform qemu, native boots the domain with the "
               "benchmark-only, unsafe unsafe-native-pt; on xen, native, unsafe and flag-range are not run). "
               "Side by side: --platform xen,qemu --accel tcg-icount runs the same guest kernel on Xen 4.17 and "
               "pvmmu and compares instructions per PTE update per mode. "
               "Exit status: 0 done, 1 a --check target failed, 2 the run failed.")
    common_args(ap)
    ap.add_argument("--vcpus", type=vcpu_list(16), default=[1, 2, 4], help="vCPU counts (default 1,2,4)")
    ap.add_argument("--pages", type=count(), default=1024, help="pages per region (default 1024: two full L1s)")
    ap.add_argument("--workload", choices=["private", "shared", "both"], default="both")
    ap.add_argument("--modes", type=name_list(MODES, "mode"), default=MODES, help="comma-separated (default all)")
    ap.add_argument("--epochs", type=count(), default=4, help="A/D-accounting epochs per run (default 4)")
    ap.add_argument("--cycles", type=count(), default=4, help="RW->RO->RW cycles per epoch (default 4)")
    ap.add_argument("--batch", type=count(ENTRIES_PER_L1), default=None,
                    help="requests per mmu_update of the atomic-array mode (default 512, a whole L1); smaller "
                         "batches split a hypervisor's cost per call from its cost per entry")
    ap.add_argument("--interleave", action="store_true",
                    help="sim: vCPUs yield the host CPU on every hypercall, so races show on a busy host "
                         "(distorts timings)")
    ap.add_argument("--csv", metavar="FILE", help="write updates/s as will-it-scale-style CSV (tasks = vCPUs)")
    ap.add_argument("--plot", metavar="FILE", help="draw updates/s against vCPUs per mode (gnuplot; .svg or .png)")
    ap.add_argument("--check", action="store_true",
                    help="check the exact targets (hypercall and flush counts, A/D accounting); exit 1 if one fails")
    ap.add_argument("--hosts", type=host_list, metavar="URI[,URI...]",
                    help="a sweep over libvirt hosts (perf/sweep.py): every (workload, vCPUs, mode) cell as its own "
                         "guest run through pvmmu-run --platform libvirt=URI on one of the hosts, the results merged "
                         "with a host column (--csv: one row per cell and host, failed cells included)")
    ap.add_argument("--per-host", type=count(), default=1, metavar="N",
                    help="--hosts: at most N machines on a host at a time (default 1)")
    ap.add_argument("--every-host", action="store_true",
                    help="--hosts: every cell on every host, to compare them (default: each cell once, on the "
                         "first host with a free slot)")
    opts = ap.parse_args()
    workloads = WORKLOADS if opts.workload == "both" else [opts.workload]
    if opts.hosts:
        if opts.platform != ["sim"] or opts.interleave:
            ap.error("--hosts runs on libvirt hosts: no --platform, no --interleave")
        return run_hosts(opts, workloads)
    if opts.per_host != 1 or opts.every_host:
        ap.error("--per-host and --every-host go with --hosts")

    plats = [make_platform(p, opts.build_dir, opts.accel, ["--interleave"] if opts.interleave else [])
             for p in opts.platform]
    doc = {"platform": ",".join(p.name for p in plats), "platforms": [p.name for p in plats],
           "machine": "; ".join(p.machine() for p in plats), "date": utc_now(),
           "command": command_line("mprotect"),
           "params": {"pages": opts.pages, "runs": opts.runs, "epochs": opts.epochs, "cycles": opts.cycles,
                      "interleave": opts.interleave, "batch": opts.batch},
           "notes": [], "results": []}
    progress = Progress(len(plats) * len(workloads) * len(opts.vcpus))
    try:
        for plat in plats:
            modes = [m for m in opts.modes if m not in plat.lacks_modes]
            for m in opts.modes:
                if m in plat.lacks_modes:
                    doc["notes"].append(f"{plat.name}: {m} not run: it needs {plat.lacks_modes[m]}")
            if not modes:
                continue
            # Native needs the guest to write its own PTEs: on bare metal only a
            # domain booted with the unsafe option may (never asked for without native).
            extra = plat.native_args if "native" in modes else []
            for wl in workloads:
                for v in opts.vcpus:
                    args = [f"workload={wl}", f"pages={opts.pages}", f"runs={opts.runs}", f"epochs={opts.epochs}",
                            f"cycles={opts.cycles}", "modes=" + ",".join(modes)] + extra
                    if opts.batch:
                        args.append(f"batch={opts.batch}")
                    rows = run_program(plat, "mprotect", v, args, progress,
                                       f"{plat.name}: {wl}, {v} vCPU{'s' if v != 1 else ''}", opts.runs * len(modes))
                    doc["results"] += summarise(rows, wl, v, plat)
        rows, targets = comparison(doc)
        if rows:
            doc["comparison"] = {"rows": rows, "targets": [{"met": ok, "target": what} for ok, what in targets]}
        progress.end()
        if opts.json:
            write_json(opts.json, doc)
        if opts.csv:
            write_csv(doc, opts.csv)
        if opts.plot:
            write_plot(doc, opts.plot)
    except (Unavailable, RuntimeError, OSError) as e:
        progress.end()
        print(f"pvmmu bench mprotect: {e}", file=sys.stderr)
        return 2
    print_table(doc, sys.stdout)
    print_comparison(doc, sys.stdout)
    if opts.check:
        return report_check(check(doc), len(doc["results"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
