#!/usr/bin/env python3
"""Linux's own page-table updates on three platforms: the host driver of
`./pvmmu bench linux`.

The same kernel (Debian 12's Linux 6.1, tools/make-xen-host.sh) and the same
initramfs (tools/make-initramfs.sh, its /init running the static program
tests/linux/user/mm_bench.c when the command line says linux-bench=ARGS)
boot under QEMU's TCG with -icount on each platform:

  native  the kernel as an ordinary x86 kernel, no hypervisor: the ceiling
  xen     dom0 of Debian's Xen 4.17 (tools/fetch-xen.sh), as the xen-host
          test boots it
  pvmmu   a PV domain of pvmmu (pvmmu-run --platform qemu --config, with
          `ramdisk =`)

One boot per (platform, vCPU count, run); mm-bench runs every workload with
one task per vCPU and prints, per workload, the guest's CLOCK_MONOTONIC
across the measured loops and the PTEs those loops changed. Under -icount
every instruction of any vCPU, the hypervisor's included, advances the
guest's clock by 2^shift ns, and an idle machine's clock jumps (sleep=off)
without instructions; so ns / 2^shift / changed pages is the whole machine's
instructions per changed page (docs/results.md §13).

Exit status: 0 done (with --check: every target holds), 1 a --check target
failed, 2 the run itself failed (bad arguments, a platform whose Linux did
not run the program: the reason is printed), 77 SKIP: a Debian package
cannot be fetched, or --check was asked without all three platforms.
"""
import argparse
import concurrent.futures
import os
import selectors
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

from guest_bench import Progress, count, host_machine, utc_now, name_list, vcpu_list, write_json, command_line
from linux_report import PLATFORMS, check, print_table, write_csv, write_plot

WORKLOADS = ["threads", "processes", "shared", "fault", "fork"]
DEFAULT_ICOUNT = "shift=0,sleep=off"
# Native Linux at several vCPUs under -icount: booted with one (maxcpus=1),
# the others brought online by mm-bench before the workloads; at boot its
# second vCPU is never run again under QEMU 7.2's round-robin icount
# (docs/results.md §13).
NATIVE_SMP_WORDS = "maxcpus=1"


class Missing(Exception):
    """A platform that could not run the program; its column says why."""


class Unfetchable(Exception):
    """A Debian package (the kernel, busybox, Xen) that cannot be fetched."""


def icount_shift(spec):
    for word in spec.split(","):
        key, _, value = word.partition("=")
        if key == "shift":
            if not value.isdigit():
                raise argparse.ArgumentTypeError("--icount needs a numeric shift= (auto counts no instructions)")
            return int(value)
    raise argparse.ArgumentTypeError("--icount needs shift=N")


def files(opts):
    """The kernel, the initramfs and Xen's image, made or fetched once."""
    src = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    build = opts.build_dir

    def tool(*args):
        r = subprocess.run(list(args), capture_output=True, text=True)
        if r.returncode == 77:
            raise Unfetchable(f"{os.path.basename(args[0])} could not fetch a package: {r.stderr.strip()[-300:]}")
        if r.returncode != 0:
            raise RuntimeError(f"{' '.join(args)} failed:\n{r.stderr}")
        return r.stdout.split()[0]

    f = {"vmlinuz": tool(f"{src}/tools/make-xen-host.sh", f"{build}/xen-host"),
         "initrd": tool(f"{src}/tools/make-initramfs.sh", f"{build}/linux", f"{build}/xen-host/base/lib/modules")}
    if "xen" in opts.platform:
        f["xen"] = tool(f"{src}/tools/fetch-xen.sh", f"{build}/xen")
    f["run"] = os.path.join(build, "tools", "pvmmu-run")
    return f


def bench_words(opts, vcpus, online=False):
    """mm-bench's arguments as one kernel command-line word (':' between words)."""
    return "linux-bench=" + ":".join((["--online-cpus"] if online else []) + ["--pvmmu-counts", "--workloads", ",".join(opts.workloads), "--tasks", str(vcpus),
                                      "--pages", str(opts.pages), "--iters", str(opts.iters)])


def command(opts, f, plat, vcpus, tmp):
    icount = ["-icount", opts.icount]
    qemu = ["qemu-system-x86_64", "-machine", "pc", "-accel", opts.tcg, *icount, "-smp", str(vcpus),
            "-display", "none", "-serial", "stdio", "-monitor", "none", "-no-reboot"]
    words = bench_words(opts, vcpus)
    if plat == "native":
        if vcpus > 1:
            words = f"{NATIVE_SMP_WORDS} {bench_words(opts, vcpus, online=True)}"
        return qemu + ["-cpu", "max", "-m", "256", "-kernel", f["vmlinuz"], "-initrd", f["initrd"],
                       "-append", f"console=ttyS0 loglevel=4 panic=-1 {words}"]
    if plat == "xen":
        # Xen's TCG set-up as in tests/xen/xen_host_test.sh (smap=0: QEMU's
        # TCG and SMAP, docs/results.md §11); QEMU's -initrd commas escaped.
        mods = f"{f['vmlinuz']} console=hvc0 loglevel=4 panic=-1 {words}".replace(",", ",,")
        return qemu + ["-cpu", "max", "-m", "1024", "-kernel", f["xen"],
                       "-append", f"console=com1 noreboot dom0_mem=512M dom0_max_vcpus={vcpus} smap=0",
                       "-initrd", f"{mods},{f['initrd']}"]
    if not os.access(f["run"], os.X_OK):
        raise Missing(f"{f['run']} is not built (cmake --build build --target pvmmu-run)")
    cfg = os.path.join(tmp, f"linux-{vcpus}.cfg")
    with open(cfg, "w") as c:
        c.write(f'name = "linux-bench"\nkernel = "{f["vmlinuz"]}"\nramdisk = "{f["initrd"]}"\n'
                f'vcpus = {vcpus}\nmemory = 256\nextra = "console=hvc0 loglevel=4 panic=-1 {words}"\n')
    return [f["run"], "--platform", "qemu", "--accel", "tcg-icount", "--cpu", "qemu64,+smep,+umip",
            "--timeout", str(opts.timeout), "--config", cfg]


def boot(opts, f, plat, vcpus, run, progress, tmp):
    """One boot; returns mm-bench's workload lines as dicts."""
    cmd = command(opts, f, plat, vcpus, tmp)
    what = f"{plat}, {vcpus} vCPU(s), run {run}"
    progress.step(what)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    buf, lines, start, done = b"", [], time.monotonic(), False
    while not done:
        left = opts.timeout - (time.monotonic() - start)
        if left <= 0:
            break
        if sel.select(timeout=min(left, 10.0)):
            chunk = os.read(proc.stdout.fileno(), 65536)
            if not chunk:
                break
            buf += chunk
            *full, buf = buf.split(b"\n")
            for raw in full:
                line = raw.decode(errors="replace").rstrip("\r")
                lines.append(line)
                done = done or line.startswith("linux-bench: exit") or "(XEN) Hardware Dom0" in line
        progress.step(f"{what}: {sum(x.startswith('mm-bench: workload=') for x in lines)} of "
                      f"{len(opts.workloads)} workloads")
    if proc.poll() is None:
        proc.kill()
    proc.wait()
    progress.advance()
    if opts.keep_logs:
        os.makedirs(opts.keep_logs, exist_ok=True)
        with open(os.path.join(opts.keep_logs, f"{plat}-{vcpus}vcpu-run{run}.log"), "w") as log:
            log.write("\n".join(lines) + "\n")
    got = [dict(w.partition("=")[::2] for w in x.split()[1:]) for x in lines if x.startswith("mm-bench: workload=")]
    # pvmmu's counts (mm-bench --pvmmu-counts): a line of their own per workload.
    pv = {d["workload"]: d for d in (dict(w.partition("=")[::2] for w in x.split()[2:])
                                     for x in lines if x.startswith("mm-bench: pvmmu workload="))}
    for g in got:
        g["pvmmu"] = pv.get(g.get("workload"), {})
    if not any(x.startswith("linux-bench: exit 0") for x in lines) or len(got) != len(opts.workloads):
        init = any(x.startswith("linux-user: /init") for x in lines)
        # The first line that says why (a panic, a crash, a refusal), else the last ones.
        cause = [x for x in lines if any(k in x for k in ("Kernel panic", "crashed", "refused", "FAIL", "BUG"))]
        tail = cause[:2] or [x for x in lines if x.strip()][-3:]
        why = ("mm-bench did not finish" if init else "Linux did not reach /init") + \
              f" in {time.monotonic() - start:.0f} s: {' | '.join(x.strip() for x in tail)[-400:]}"
        raise Missing(why)
    return got


class LockedProgress(Progress):
    """Progress lines from several boots' threads, one at a time."""

    def __init__(self, total):
        super().__init__(total)
        self.lock = threading.Lock()

    def step(self, what):
        with self.lock:
            super().step(what)

    def advance(self):
        with self.lock:
            super().advance()


def measure(opts):
    f = files(opts)
    shift = icount_shift(opts.icount)
    cells = [(p, v, r) for p in opts.platform for v in opts.vcpus for r in range(opts.runs)]
    progress = LockedProgress(len(cells))
    samples, missing = {}, {}
    lock = threading.Lock()
    first_pvmmu = threading.Event()   # pvmmu's 1-vCPU boot ended
    if "pvmmu" not in opts.platform or 1 not in opts.vcpus:
        first_pvmmu.set()

    def one(cell, tmp):
        plat, vcpus, run = cell
        if plat == "pvmmu" and vcpus > 1:
            first_pvmmu.wait()
        try:
            measure_cell(cell, tmp)
        finally:
            if plat == "pvmmu" and vcpus == 1:
                first_pvmmu.set()

    def measure_cell(cell, tmp):
        plat, vcpus, run = cell
        with lock:
            # pvmmu fails alike at every vCPU count: one reason is enough.
            why = missing.get((plat, vcpus)) or (missing.get((plat, 1)) if plat == "pvmmu" else None)
        if why:
            with lock:
                missing.setdefault((plat, vcpus), why)
                progress.advance()
            return
        try:
            rows = boot(opts, f, plat, vcpus, run + 1, progress, tmp)
        except Missing as e:
            with lock:
                missing[(plat, vcpus)] = str(e)
            return
        with lock:
            for r in rows:
                samples.setdefault((plat, r["workload"], vcpus), []).append(r)

    with tempfile.TemporaryDirectory() as tmp:
        # pvmmu's 1-vCPU boot first: where it fails, the others are not tried.
        cells.sort(key=lambda c: (c[0] != "pvmmu" or c[1] != 1,))
        with concurrent.futures.ThreadPoolExecutor(max_workers=opts.jobs) as pool:
            list(pool.map(lambda c: one(c, tmp), cells))
    progress.end()
    results = []
    for (plat, wl, vcpus), rs in sorted(samples.items(), key=lambda kv: (PLATFORMS.index(kv[0][0]),
                                                                          WORKLOADS.index(kv[0][1]), kv[0][2])):
        per_page = [int(r["ns"]) / (1 << shift) / int(r["changed"]) for r in rs]
        total = lambda k: sum(int(r[k]) for r in rs)   # noqa: E731
        counts = {k: (None if any(int(r[k]) < 0 for r in rs) else round(total(k) / total("ops"), 3))
                  for k in ("pgfault", "tlb_shootdowns", "tlb_remote_flush")}
        results.append({
            "platform": plat, "workload": wl, "vcpus": vcpus, "runs": len(rs),
            "instructions_per_page": round(statistics.median(per_page), 1),
            "instructions_per_page_min": round(min(per_page), 1),
            "instructions_per_page_max": round(max(per_page), 1),
            "pages_per_s": round(statistics.median(int(r["changed"]) / (int(r["ns"]) / 1e9) for r in rs)),
            "ops_per_s": round(statistics.median(int(r["ops"]) / (int(r["ns"]) / 1e9) for r in rs)),
            "pages_per_op": int(rs[0]["changed"]) // int(rs[0]["ops"]),
            "pgfault_per_op": counts["pgfault"], "tlb_shootdowns_per_op": counts["tlb_shootdowns"],
            "tlb_remote_flush_per_op": counts["tlb_remote_flush"],
            **pvmmu_counts(rs),
        })
    return {"benchmark": "linux", "command": command_line("linux"), "date": utc_now(), "machine": host_machine(),
            "qemu": f"-accel {opts.tcg} -icount {opts.icount}", "icount_shift": shift,
            "params": {"pages": opts.pages, "iters": opts.iters, "runs": opts.runs, "vcpus": opts.vcpus,
                       "workloads": opts.workloads},
            "platforms": opts.platform,
            "missing": {f"{p} {v}": why for (p, v), why in sorted(missing.items())}, "results": results}


# mm-bench's pvmmu counts (tests/linux/user/pvmmu_counts.h): the line's key,
# and the name of its figure per op in the results.
PV_COUNTS = (("hypercalls", "hypercalls"), ("mmu_updates", "mmu_updates"), ("requests", "requests"),
             ("multicalls", "multicalls"), ("mc_entries", "multicall_entries"),
             ("pt_writes", "pt_writes"), ("flush_local", "flush_local"), ("flush_remote", "flush_remote"),
             ("continuations", "continuations"), ("faults", "faults"))


def pvmmu_counts(rs):
    """pvmmu's counts of a cell's runs, per op (summed over runs, divided by
    the ops), requests per mmu_update call, and the A/D install retries in
    all; or why there are none (natively, on Xen)."""
    if any("hypercalls" not in r["pvmmu"] for r in rs):
        why = next((r["pvmmu"]["unavailable"] for r in rs if "unavailable" in r["pvmmu"]), "not reported")
        return {"pvmmu_counts": None, "pvmmu_counts_unavailable": why}
    total = lambda k: sum(int(r["pvmmu"][k]) for r in rs)   # noqa: E731
    ops = sum(int(r["ops"]) for r in rs)
    c = {name: round(total(key) / ops, 2) for key, name in PV_COUNTS}
    c["requests_per_mmu_update"] = round(total("requests") / total("mmu_updates"), 2) \
        if total("mmu_updates") else None
    c["ad_install_retries"] = total("ad_retries") if all("ad_retries" in r["pvmmu"] for r in rs) else None
    return {"pvmmu_counts": c, "pvmmu_counts_unavailable": None}


def platform_list(s):
    v = [x for x in s.split(",") if x]
    if not v or any(x not in PLATFORMS for x in v):
        raise argparse.ArgumentTypeError(f"platforms: {', '.join(PLATFORMS)}")
    return [p for p in PLATFORMS if p in v]


def main():
    ap = argparse.ArgumentParser(
        prog="./pvmmu bench linux", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Instructions per changed page of Linux 6.1's mprotect, faults and fork, natively, as dom0 of "
                    "Xen 4.17 and on pvmmu, under QEMU TCG with -icount (docs/results.md §13).",
        epilog="exit: 0 done, 1 a --check target failed, 2 the run failed (a platform's Linux did not run "
               "the program: why is printed), 77 SKIP: a package cannot be fetched, or --check without all "
               "three platforms")
    ap.add_argument("--platform", type=platform_list, default=list(PLATFORMS), metavar="P[,P...]",
                    help="native, xen, pvmmu (default all three)")
    ap.add_argument("--vcpus", type=vcpu_list(8), default=[1, 2, 4], help="vCPU counts (default 1,2,4)")
    ap.add_argument("--runs", type=count(), default=1, help="boots per cell; medians (default 1: -icount "
                    "repeats to a few per mille)")
    ap.add_argument("--workloads", type=name_list(WORKLOADS, "workload"), default=list(WORKLOADS), metavar="W[,W...]",
                    help=f"{', '.join(WORKLOADS)} (default all; tests/linux/user/mm_bench.c)")
    ap.add_argument("--pages", type=count(1 << 18), default=1024, help="pages per task (default 1024)")
    ap.add_argument("--iters", type=count(), default=4, help="iterations per task (default 4)")
    ap.add_argument("--icount", type=str, default=DEFAULT_ICOUNT,
                    help=f"QEMU's -icount (default {DEFAULT_ICOUNT}; pvmmu-run uses its own, shift=0)")
    ap.add_argument("--tcg", default="tcg,thread=single", help=argparse.SUPPRESS)
    ap.add_argument("--timeout", type=count(), default=900, help="seconds per boot (default 900)")
    ap.add_argument("--jobs", type=count(16), default=1, help="boots side by side (default 1)")
    ap.add_argument("--keep-logs", metavar="DIR", help="keep each boot's console in DIR")
    ap.add_argument("--json", metavar="FILE", help="write the results as JSON")
    ap.add_argument("--csv", metavar="FILE", help="write the results as CSV")
    ap.add_argument("--plot", metavar="FILE", help="plot instructions per page against vCPUs (.svg or .png)")
    ap.add_argument("--check", action="store_true", help="hold the targets (pvmmu's overhead over native at most "
                    "half of Xen's; pvmmu never dearer than Xen)")
    ap.add_argument("--build-dir", default=os.path.join(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))), "build"), help=argparse.SUPPRESS)
    opts = ap.parse_args()
    icount_shift(opts.icount)
    if not shutil.which("qemu-system-x86_64"):
        print("bench linux: qemu-system-x86_64 is not installed (./pvmmu deps)", file=sys.stderr)
        return 2
    try:
        doc = measure(opts)
    except Unfetchable as e:
        print(f"SKIP: {e}")
        return 77
    except (Missing, RuntimeError) as e:
        print(f"bench linux: {e}", file=sys.stderr)
        return 2
    print_table(doc)
    failed = list(doc["missing"])
    if opts.json:
        write_json(opts.json, doc)
    if opts.csv:
        write_csv(doc, opts.csv)
    if opts.plot:
        write_plot(doc, opts.plot)
    if failed:
        print(f"bench linux: Linux did not run the benchmark on {', '.join(failed)} (above)", file=sys.stderr)
        return 2
    if opts.check:
        bad, why = check(doc)
        if why:
            print(f"\ncheck: SKIP, cannot be held: {why}")
            return 77
        for b in bad:
            print(f"CHECK FAILED: {b}", file=sys.stderr)
        if bad:
            return 1
        print("\ncheck: every target holds")
    return 0


if __name__ == "__main__":
    sys.exit(main())
