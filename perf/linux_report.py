"""The report of `./pvmmu bench linux` (perf/bench_linux.py, which measures):
its tables on stdout, the --check targets, the CSV and the plot, all read
from the JSON document the driver writes (docs/results.md §13)."""
import csv
import os
import shutil
import subprocess
import tempfile

PLATFORMS = ["native", "xen", "pvmmu"]


def print_pvmmu_counts(doc):
    rows = [r for r in doc["results"] if r.get("pvmmu_counts")]
    gone = sorted({(r["platform"], r["pvmmu_counts_unavailable"]) for r in doc["results"]
                   if r.get("pvmmu_counts_unavailable")})
    if not rows:
        for plat, why in gone:
            print(f"\npvmmu's own counts: {plat}: unavailable ({why})")
        return
    print("\npvmmu's own counts per op (PVMMUOP_vcpu_calls and _vcpu_counters, summed over the vCPUs; "
          "the whole guest during the loops)")
    print(f"{'workload':<10} {'vCPUs':>5} {'hcalls/op':>9} {'mmu_upd/op':>10} {'reqs/op':>8} {'reqs/call':>9} "
          f"{'mc ents/op':>10} {'ptwr/op':>8} {'flush loc':>9} {'flush rem':>9} {'A/D retries':>11}")
    for r in rows:
        c = r["pvmmu_counts"]
        g = lambda x: "—" if x is None else f"{x:g}"   # noqa: E731
        print(f"{r['workload']:<10} {r['vcpus']:>5} {g(c['hypercalls']):>9} {g(c['mmu_updates']):>10} "
              f"{g(c['requests']):>8} {g(c['requests_per_mmu_update']):>9} {g(c['multicall_entries']):>10} "
              f"{g(c['pt_writes']):>8} {g(c['flush_local']):>9} {g(c['flush_remote']):>9} "
              f"{g(c['ad_install_retries']):>11}")
    print("A/D retries: installs that found the CPU had set an A/D bit since the entry was read, redone with it "
          "kept (no A/D bit is lost: every install is a compare-exchange against the value it was computed from)")
    for plat, why in gone:
        print(f"  {plat}: counts unavailable ({why})")


def cell(doc, plat, wl, vcpus):
    for r in doc["results"]:
        if (r["platform"], r["workload"], r["vcpus"]) == (plat, wl, vcpus):
            return r
    return None


def side_by_side(doc):
    """Rows (workload, vCPUs, native, xen, pvmmu, xen x, pvmmu x) of
    instructions per changed page; None where a platform has no figure."""
    rows = []
    for wl in doc["params"]["workloads"]:
        for v in doc["params"]["vcpus"]:
            ipp = {p: (cell(doc, p, wl, v) or {}).get("instructions_per_page") for p in PLATFORMS}
            if all(x is None for x in ipp.values()):
                continue
            over = {p: ipp[p] / ipp["native"] if ipp[p] is not None and ipp["native"] else None
                    for p in ("xen", "pvmmu")}
            rows.append((wl, v, ipp, over))
    return rows


def print_table(doc):
    print(f"Linux 6.1's page-table updates: {', '.join(doc['platforms'])} under QEMU {doc['qemu']} "
          f"on {doc['machine']}, {doc['date']}")
    p = doc["params"]
    print(f"{p['pages']} pages per task, {p['iters']} iterations, one task per vCPU, {p['runs']} run(s) (medians)")
    fmt = lambda x: "—" if x is None else f"{x:.1f}"   # noqa: E731
    ratio = lambda x: "—" if x is None else f"{x:.2f}x"   # noqa: E731
    print(f"{'workload':<10} {'vCPUs':>5} {'native':>9} {'Xen 4.17':>9} {'pvmmu':>9} {'Xen/nat':>8} {'pvmmu/nat':>9}")
    print("-" * 66)
    for wl, v, ipp, over in side_by_side(doc):
        print(f"{wl:<10} {v:>5} {fmt(ipp['native']):>9} {fmt(ipp['xen']):>9} {fmt(ipp['pvmmu']):>9} "
              f"{ratio(over['xen']):>8} {ratio(over['pvmmu']):>9}")
    print(f"\ninstructions per changed page: the guest's clock across the measured loops / 2^{doc['icount_shift']} "
          "(every instruction of every vCPU, hypervisor included) / PTEs changed")
    print("\ncounts per op (mprotect, mmap or fork), from the guest's /proc: page faults, TLB shootdown IPIs")
    print(f"{'platform':<8} {'workload':<10} {'vCPUs':>5} {'pages/op':>8} {'faults/op':>9} {'shootdowns/op':>13} "
          f"{'pages/s':>10}")
    for r in doc["results"]:
        c = lambda x: "—" if x is None else f"{x:g}"   # noqa: E731
        print(f"{r['platform']:<8} {r['workload']:<10} {r['vcpus']:>5} {r['pages_per_op']:>8} "
              f"{c(r['pgfault_per_op']):>9} {c(r['tlb_shootdowns_per_op']):>13} {r['pages_per_s']:>10}")
    print_pvmmu_counts(doc)
    if doc["missing"]:
        print("\nnot measured (platform, vCPUs: why):")
    for cell_name, why in doc["missing"].items():
        print(f"  {cell_name}: {why}")


def check(doc):
    """Issue targets, instruction counts only: pvmmu's overhead over native at
    most half of Xen's, and pvmmu never dearer than Xen, in every cell. The
    driver calls it only with every cell measured. Returns (failures, None),
    or (None, why) when the run lacks a platform."""
    if any(p not in doc["platforms"] for p in PLATFORMS):
        return None, "--check needs --platform native,xen,pvmmu"
    bad = []
    for wl, v, ipp, _ in side_by_side(doc):
        n, x, m = ipp["native"], ipp["xen"], ipp["pvmmu"]
        if None in (n, x, m):
            bad.append(f"{wl}, {v} vCPU(s): a platform has no figure")
            continue
        if m - n > 0.5 * (x - n):
            bad.append(f"{wl}, {v} vCPU(s): pvmmu's overhead {m - n:.1f} > half of Xen's {x - n:.1f}")
        if m > x:
            bad.append(f"{wl}, {v} vCPU(s): pvmmu {m:.1f} > Xen {x:.1f} instructions per page")
    return bad, None


def write_csv(doc, path):
    keys = list(doc["results"][0].keys()) if doc["results"] else ["platform"]
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        w.writerows(doc["results"])


def write_plot(doc, path):
    if not shutil.which("gnuplot"):
        raise RuntimeError("gnuplot is not installed (apt-get install gnuplot-nox; it is in tools/deps.txt)")
    wls = [w for w in doc["params"]["workloads"] if any(r["workload"] == w for r in doc["results"])]
    svg = path.endswith(".svg")
    with tempfile.TemporaryDirectory() as tmp:
        script = [f"set terminal {'svg size 1200,420 dynamic' if svg else 'pngcairo size 1200,420'} font 'sans,10'",
                  f"set output '{path}'",
                  f"set multiplot layout 1,{len(wls)} title 'Linux 6.1: instructions per changed page "
                  f"({doc['date'][:10]})'", "set logscale y", "set key below horizontal", "set grid",
                  "set xlabel 'vCPUs'"]
        for wl in wls:
            plots = []
            for plat in doc["platforms"]:
                data = os.path.join(tmp, f"{plat}-{wl}.dat")
                with open(data, "w") as f:
                    for r in doc["results"]:
                        if (r["platform"], r["workload"]) == (plat, wl):
                            f.write(f"{r['vcpus']} {r['instructions_per_page']} {r['instructions_per_page_min']} "
                                    f"{r['instructions_per_page_max']}\n")
                if os.path.getsize(data):
                    plots.append(f"'{data}' using 1:2:3:4 with yerrorlines title '{plat}'")
            script += ["set xtics (" + ", ".join(str(v) for v in doc["params"]["vcpus"]) + ")",
                       f"set title '{wl}'", "plot " + ", ".join(plots)]
        script.append("unset multiplot")
        r = subprocess.run(["gnuplot"], input="\n".join(script) + "\n", capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"gnuplot failed:\n{r.stderr}")
