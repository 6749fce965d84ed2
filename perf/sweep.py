"""Benchmark sweeps over several libvirt hosts:
`./pvmmu bench mprotect --hosts URI1,URI2,... [--per-host N]`.

The single-host benchmark (bench_mprotect.py) runs its (workload, vCPUs) guest
runs one after the other on one platform. A sweep cuts the same work into
cells, one (workload, vCPUs, mode) each, and runs every cell as its own guest
run through `pvmmu-run --platform libvirt=URI` on one of the hosts: at most
--per-host machines on a host at a time (default 1, so cells on one host do
not compete for its CPUs), the next cell to whichever host has a free slot
(--spread, the default) or every cell on every host (--every-host, to compare
hosts). Each host is described first (`pvmmu-run --describe-host`: CPU model,
cores, kernel, QEMU and libvirt versions); a host that cannot be described
takes no cell. A cell that fails is reported, in the table, the JSON and the
CSV, never dropped. The results of all hosts are merged into one document
with a `host` column.

The scheduler (schedule) and the merge (merge, write_csv) take plain data,
so tests/tools/sweep_test.py runs them without a machine.
"""
import csv
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time

from guest_bench import Unavailable, make_platform, run_program, utc_now

# --- the scheduler -------------------------------------------------------------


class Job:
    """One unit of work: `cell` (any value) on one of `hosts` (labels)."""

    def __init__(self, cell, hosts):
        self.cell, self.hosts = cell, list(hosts)


def schedule(jobs, hosts, per_host, run, report=None):
    """Runs every job on one of its hosts, at most per_host jobs on a host at a
    time, each job as soon as one of its hosts has a free slot (the jobs in
    their order). run(host, slot, cell) does the work (slot: 0..per_host-1,
    unique among the jobs running on that host) and returns its result or
    raises; report(event, host, job, index, outcome), if given, is told of
    each start and end (under a lock: one line at a time). Returns
    [(host, cell, result, error)] in the jobs' order; a job none of whose
    hosts exists gets host None and an error."""
    pending = list(enumerate(jobs))
    out = [None] * len(jobs)
    lock = threading.Lock()
    for i, j in list(pending):
        if not any(h in hosts for h in j.hosts):
            out[i] = (None, j.cell, None, "none of its hosts can run it: " + ", ".join(map(str, j.hosts)))
            pending.remove((i, j))

    def take(host):
        with lock:
            for k, (i, j) in enumerate(pending):
                if host in j.hosts:
                    del pending[k]
                    return i, j
        return None

    def worker(host, slot):
        while True:
            got = take(host)
            if got is None:
                return
            i, j = got
            if report:
                with lock:
                    report("start", host, j, i, None)
            try:
                out[i] = (host, j.cell, run(host, slot, j.cell), None)
            except Exception as e:   # a failed cell is reported, never the end of the sweep
                out[i] = (host, j.cell, None, str(e) or type(e).__name__)
            if report:
                with lock:
                    report("end", host, j, i, out[i])

    threads = [threading.Thread(target=worker, args=(h, s), daemon=True)
               for h in hosts for s in range(per_host)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


def make_jobs(cells, hosts, every_host):
    """A job per cell that any host may run, or one per (cell, host)."""
    if every_host:
        return [Job(c, [h]) for c in cells for h in hosts]
    return [Job(c, hosts) for c in cells]


# --- the hosts -----------------------------------------------------------------


def slot_uri(uri, slot):
    """The URI a host's slot connects to. The embedded driver's root is one
    process's at a time (libvirt locks ROOT/run/qemu/driver.pid), so with
    --per-host N each slot of a qemu:///embed host gets a root of its own next
    to the named one; every other URI is shared."""
    prefix = "qemu:///embed?root="
    if slot == 0 or not uri.startswith(prefix) or "&" in uri:
        return uri
    return f"{uri}.slot{slot}"


def terminal_text(text):
    """`text` with its control characters (C0, DEL, C1) as '?': what a remote
    host says (its hostname, CPU model, error messages) reaches the user's
    terminal, and must not move its cursor or run an escape sequence."""
    return "".join("?" if ord(c) < 0x20 or 0x7f <= ord(c) <= 0x9f else c for c in str(text))


def scrubbed(value):
    """A JSON value with every string in it made terminal_text."""
    if isinstance(value, str):
        return terminal_text(value)
    if isinstance(value, list):
        return [scrubbed(v) for v in value]
    if isinstance(value, dict):
        return {terminal_text(k): scrubbed(v) for k, v in value.items()}
    return value


def describe_host(build, uri):
    """The host's description from `pvmmu-run --describe-host` (a dict, its
    strings without control characters: a remote host chooses them), or
    raises RuntimeError with pvmmu-run's reason."""
    runner = os.path.join(build, "tools", "pvmmu-run")
    r = subprocess.run([runner, "--platform", f"libvirt={uri}", "--describe-host"], capture_output=True, text=True,
                       timeout=120, errors="replace")
    if r.returncode != 0:
        raise RuntimeError(terminal_text((r.stderr or r.stdout).strip() or f"pvmmu-run exited {r.returncode}"))
    return scrubbed(json.loads(r.stdout))


def uri_host(uri):
    """The host a URI names ("" after "scheme://": "host")."""
    _, sep, rest = uri.partition("://")
    return (rest.split("/", 1)[0] if sep else "") or "host"


def host_labels(descriptions):
    """Short names for the host column: each host's hostname, with #N where
    several share one (two roots on one machine); a host that could not be
    described goes by its URI's host. descriptions: (uri, dict or None) in
    --hosts order. A label keeps a hostname's own characters (letters,
    digits, '.', '-', '_'); any other is '_', as the remote host chose it."""
    names = [re.sub(r"[^A-Za-z0-9._-]", "_", str((d or {}).get("hostname") or uri_host(u)))
             for u, d in descriptions]
    seen, labels = {}, []
    for n in names:
        seen[n] = seen.get(n, 0) + 1
        labels.append(f"{n}#{seen[n]}" if names.count(n) > 1 else n)
    return labels


def host_summary(d):
    """One line about a described host."""
    if not d:
        return "not described"
    topo = f"{d['sockets']} socket(s) x {d['cores_per_socket']} core(s) x {d['threads_per_core']} thread(s)"
    return (f"{d.get('cpu_model') or d['arch']}, {d['cpus']} CPUs ({topo}), {d['mhz']} MHz, "
            f"{d['memory_kib'] // 1024} MiB, {d.get('kernel') or 'kernel unknown (remote)'}, "
            f"{d.get('driver') or 'driver'} {d.get('driver_version') or '?'}, "
            f"libvirt {d.get('libvirt_version') or '?'}")


class _Quiet:
    """run_program's progress: the sweep prints its own lines."""

    def step(self, what):
        pass

    def advance(self):
        pass


# --- the merge -----------------------------------------------------------------


def reason(error):
    """A failed cell's error in one line: pvmmu-run's verdict where the
    console has one (its last `pvmmu-run: WORD (exit N): why`), else the
    first line."""
    lines = (error or "").splitlines()
    verdicts = [x for x in lines if x.startswith("pvmmu-run: ") and "(exit " in x]
    return verdicts[-1] if verdicts else (lines[0] if lines else "")


def cell_name(cell):
    wl, v, mode = cell
    return f"{wl}, {v} vCPU{'s' if v != 1 else ''}, {mode}"


def merge(hosts, outcomes):
    """The sweep's results as one list with a `host` column: hosts is
    [{label, uri, description, error}], outcomes schedule()'s
    [(label, cell, rows, error)] with rows bench_mprotect.summarise's dicts.
    %native is against the native cell of the same host and (workload,
    vCPUs): another boot on the same machine. Returns (results, failed)."""
    results, failed = [], []
    for label, cell, rows, error in outcomes:
        if error is not None:
            wl, v, mode = cell
            failed.append({"host": label, "workload": wl, "vcpus": v, "mode": mode, "error": error})
            continue
        for r in rows:
            results.append(dict(r, host=label, uri=next(h["uri"] for h in hosts if h["label"] == label)))
    native = {(r["host"], r["workload"], r["vcpus"]): r["pte_updates_per_s"] for r in results
              if r["mode"] == "native"}
    for r in results:
        n = native.get((r["host"], r["workload"], r["vcpus"]))
        r["pct_of_native"] = round(100.0 * r["pte_updates_per_s"] / n, 1) if n else None
    order = {h["label"]: i for i, h in enumerate(hosts)}
    key = lambda r: (order.get(r["host"], len(order)), r["workload"], r["vcpus"], r["mode"])
    return sorted(results, key=key), sorted(failed, key=key)


CSV_COLUMNS = ["host", "uri", "workload", "vcpus", "mode", "status", "pte_updates_per_s", "pte_updates_per_s_min",
               "pte_updates_per_s_max", "pct_of_native", "instructions_per_pte", "hypercalls_per_512_ptes",
               "tlb_flushes_local_per_mprotect", "tlb_flushes_remote_per_mprotect", "ad_lost", "error"]


def write_csv(doc, path):
    """One row per cell and host, failed cells included (status failed, the
    error in the last column)."""
    uri = {h["label"]: h["uri"] for h in doc["hosts"]}
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=CSV_COLUMNS, extrasaction="ignore")
        w.writeheader()
        for r in doc["results"]:
            w.writerow(dict({k: "" if r.get(k) is None else r.get(k) for k in CSV_COLUMNS}, status="ok", error=""))
        for r in doc["failed"]:
            w.writerow(dict({k: "" for k in CSV_COLUMNS}, host=r["host"] or "", uri=uri.get(r["host"], ""),
                            workload=r["workload"], vcpus=r["vcpus"], mode=r["mode"], status="failed",
                            error=r["error"]))


def print_table(doc, out, fmt_rate):
    print(f"mprotect sweep over {len(doc['hosts'])} hosts, {doc['date']}", file=out)
    p = doc["params"]
    print(f"{p['pages']} pages per region, {p['runs']} runs x {p['epochs']} epochs x {p['cycles']} cycles; "
          f"accel {doc['accel']}; {'every cell on every host' if p['every_host'] else 'cells spread'}, "
          f"{p['per_host']} machine(s) per host at a time", file=out)
    for h in doc["hosts"]:
        print(f"  {h['label']}: {h['uri']}: " + (host_summary(h["description"]) if h["description"]
                                                  else f"NOT DESCRIBED, no cell: {h['error']}"), file=out)
    icount = any(r["instructions_per_pte"] is not None for r in doc["results"])
    width = max([len("host")] + [len(str(r["host"])) for r in doc["results"] + doc["failed"]])
    head = (f"{'host':<{width}} {'workload':<8} {'vCPUs':>5} {'mode':<12} {'updates/s':>10} {'min':>9} {'max':>9} "
            f"{'%native':>8} " + (f"{'instr/PTE':>9} " if icount else "") + f"{'hc/512':>7} {'A/D lost':>9}")
    print(head, file=out)
    print("-" * len(head), file=out)
    for r in doc["results"]:
        pct = "-" if r["pct_of_native"] is None else f"{r['pct_of_native']:.1f}"
        hc = "-" if r["hypercalls_per_512_ptes"] is None else f"{r['hypercalls_per_512_ptes']:g}"
        ipp = (f"{r['instructions_per_pte']:>9.1f} " if r["instructions_per_pte"] is not None else f"{'-':>9} ") \
            if icount else ""
        print(f"{r['host']:<{width}} {r['workload']:<8} {r['vcpus']:>5} {r['mode']:<12} "
              f"{fmt_rate(r['pte_updates_per_s']):>10} {fmt_rate(r['pte_updates_per_s_min']):>9} "
              f"{fmt_rate(r['pte_updates_per_s_max']):>9} {pct:>8} {ipp}{hc:>7} {r['ad_lost']:>9}", file=out)
    for r in doc["failed"]:
        print(f"{str(r['host']):<{width}} {r['workload']:<8} {r['vcpus']:>5} {r['mode']:<12} FAILED: "
              f"{reason(r['error'])}", file=out)
    print(f"\n{len(doc['results'])} results, {len(doc['failed'])} failed cell(s); %native: against the native "
          "cell of the same host (another boot)", file=out)


def write_plot(doc, path):
    """updates/s against vCPUs, one line per (host, mode), a panel per workload."""
    import shutil
    if not shutil.which("gnuplot"):
        raise Unavailable("gnuplot is not installed (apt-get install gnuplot-nox; it is in tools/deps.txt)")
    workloads = sorted({r["workload"] for r in doc["results"]})
    series = sorted({(r["host"], r["mode"]) for r in doc["results"]})
    if not workloads:
        raise RuntimeError("no results to plot")
    def q(text):
        """Text inside gnuplot's '...': a quote doubled, so nothing ends the
        string; no line end (a newline would start a gnuplot command, and
        `!cmd` runs a shell), no control character, no '`' or '@' (gnuplot's
        command and macro substitutions) and no '\\'."""
        text = str(text)
        if any(ord(c) < 0x20 or 0x7f <= ord(c) <= 0x9f or c in "`@\\" for c in text):
            raise ValueError(f"cannot give gnuplot the text {terminal_text(text)!r}: it has a control character, "
                             "'`', '@' or '\\'")
        return text.replace("'", "''")

    def label(text):   # a series' or panel's title: names from remote hosts, any character not plain is '_'
        return q(re.sub(r"[^A-Za-z0-9 ._:#+,()%=/-]", "_", str(text)))

    with tempfile.TemporaryDirectory() as tmp:
        script = [f"set terminal {'svg size 1000,460 dynamic' if path.endswith('.svg') else 'pngcairo size 1000,460'}"
                  " font 'sans,10'", f"set output '{q(path)}'",
                  f"set multiplot layout 1,{len(workloads)} title 'mprotect sweep: PTE updates/s against vCPUs "
                  f"per host ({doc['date'][:10]})'", "set logscale y", "set key below horizontal", "set grid",
                  "set xlabel 'vCPUs'", "set ylabel 'PTE updates/s (median)'"]
        for wl in workloads:
            plots = []
            for n, (host, mode) in enumerate(series):
                rows = sorted((r for r in doc["results"] if (r["host"], r["mode"], r["workload"]) == (host, mode, wl)),
                              key=lambda r: r["vcpus"])
                if not rows:
                    continue
                data = os.path.join(tmp, f"{wl}-{n}.dat")
                with open(data, "w") as f:
                    for r in rows:
                        f.write(f"{r['vcpus']} {r['pte_updates_per_s']} {r['pte_updates_per_s_min']} "
                                f"{r['pte_updates_per_s_max']}\n")
                plots.append(f"'{q(data)}' using 1:2:3:4 with yerrorlines title '{label(host)} {label(mode)}'")
            vcpus = sorted({r["vcpus"] for r in doc["results"]})
            script += ["set xtics (" + ", ".join(str(v) for v in vcpus) + ")", f"set title '{label(wl)}'",
                       "plot " + ", ".join(plots)]
        script.append("unset multiplot")
        r = subprocess.run(["gnuplot"], input="\n".join(script) + "\n", capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"gnuplot failed:\n{r.stderr}")


# --- the sweep -----------------------------------------------------------------


def run_sweep(opts, cells, cell_args, summarise, log=sys.stderr):
    """Describes the hosts (opts.hosts), runs the cells over them and merges
    the results into a document (print_table, write_csv, write_plot).
    cell_args(cell, plat) gives the guest's KEY=VALUE words of one cell;
    summarise(rows, workload, vcpus, plat) its results (bench_mprotect's)."""
    t0 = time.monotonic()
    say = lambda line: (print(f"[sweep {time.monotonic() - t0:6.1f} s] {line}", file=log), log.flush())
    # All hosts at once: a fresh embedded root probes QEMU first (10 s or more).
    described = [(uri, None, "not described") for uri in opts.hosts]

    def describe(i, uri):
        try:
            described[i] = (uri, describe_host(opts.build_dir, uri), None)
        except (RuntimeError, OSError, ValueError, subprocess.TimeoutExpired) as e:
            described[i] = (uri, None, str(e))

    threads = [threading.Thread(target=describe, args=(i, u), daemon=True) for i, u in enumerate(opts.hosts)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    labels = host_labels([(u, d) for u, d, _ in described])
    hosts = [{"label": lab, "uri": u, "description": d, "error": e} for lab, (u, d, e) in zip(labels, described)]
    for h in hosts:
        say(f"host {h['label']}: {h['uri']}: " + (host_summary(h["description"]) if h["description"]
                                                  else f"cannot be described, it takes no cell: {h['error']}"))
    usable = [h["label"] for h in hosts if h["description"]]
    # Each slot of a host connects to its own URI (slot_uri).
    plats = {(h["label"], slot): make_platform("libvirt=" + slot_uri(h["uri"], slot), opts.build_dir, opts.accel)
             for h in hosts for slot in range(opts.per_host)}
    jobs = make_jobs(cells, [h["label"] for h in hosts] if opts.every_host else usable, opts.every_host)
    done = [0]

    def report(event, label, job, index, outcome):
        if event == "start":
            say(f"[{done[0]}/{len(jobs)} done] {label}: {cell_name(job.cell)}: started")
            return
        done[0] += 1
        what = "done" if outcome[3] is None else "FAILED: " + reason(outcome[3])
        say(f"[{done[0]}/{len(jobs)} done] {outcome[0] or '-'}: {cell_name(job.cell)}: {what}")

    def run_in_slot(label, slot, cell):
        if label not in usable:
            raise RuntimeError(f"host {label} could not be described: "
                               + next(h["error"] for h in hosts if h["label"] == label))
        plat = plats[(label, slot)]
        wl, v, _ = cell
        rows = run_program(plat, "mprotect", v, cell_args(cell, plat), _Quiet(), cell_name(cell))
        return summarise(rows, wl, v, plat)

    outcomes = schedule(jobs, [h["label"] for h in hosts], opts.per_host, run_in_slot, report)
    results, failed = merge(hosts, outcomes)
    say(f"{len(results)} results, {len(failed)} failed cell(s)")
    return {"sweep": True, "date": utc_now(), "accel": opts.accel, "hosts": hosts, "results": results,
            "failed": failed}
