#!/usr/bin/env python3
"""A benchmark sweep over two libvirt hosts for real: two
connections to this machine, the embedded QEMU driver in two roots under the
build tree, so the scheduler, the host descriptions and the merge run with
real guest runs. Two cells (1 and 2 vCPUs, flag-range, one L1 of pages), one on
each host at once; then the JSON and CSV must hold both hosts' results with a
host column, each host described (CPUs, driver version), no failed cell, and
--check's exact targets met. Exit 77 (CTest's SKIP) where the embedded
driver cannot be reached.

usage: sweep_e2e.py BUILD_DIR"""
import csv
import json
import os
import subprocess
import sys


def main():
    build = os.path.abspath(sys.argv[1])
    perf = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "perf")
    out = os.path.join(build, "tests", "sweep-e2e")
    os.makedirs(out, exist_ok=True)
    uris = [f"qemu:///embed?root={out}/host-{n}" for n in ("a", "b")]
    probe = subprocess.run([os.path.join(build, "tools", "pvmmu-run"), "--platform", f"libvirt={uris[0]}",
                            "--describe-host"], capture_output=True, text=True)
    if probe.returncode == 3:
        print(f"SKIP: {probe.stderr.strip()}")
        return 77
    js, cs = os.path.join(out, "sweep.json"), os.path.join(out, "sweep.csv")
    for f in (js, cs):
        if os.path.exists(f):
            os.remove(f)
    cmd = [sys.executable, os.path.join(perf, "bench_mprotect.py"), "--build-dir", build, "--hosts", ",".join(uris),
           "--accel", "tcg", "--vcpus", "1,2", "--workload", "private", "--modes", "flag-range", "--pages", "512",
           "--runs", "1", "--epochs", "1", "--cycles", "1", "--json", js, "--csv", cs, "--check"]
    print(" ".join(cmd), flush=True)
    r = subprocess.run(cmd)
    bad = [] if r.returncode == 0 else [f"the sweep exited {r.returncode}"]
    if not os.path.exists(js) or not os.path.exists(cs):
        print("FAILED: no JSON or CSV written")
        return 1
    with open(js) as f:
        doc = json.load(f)
    with open(cs) as f:
        rows = list(csv.DictReader(f))
    labels = [h["label"] for h in doc["hosts"]]
    if len(labels) != 2 or len(set(labels)) != 2:
        bad.append(f"hosts {labels}: want two labels")
    for h in doc["hosts"]:
        d = h["description"] or {}
        if not d.get("cpus") or not d.get("driver_version") or not d.get("libvirt_version"):
            bad.append(f"host {h['label']} not described: {h}")
    if doc["failed"]:
        bad.append(f"failed cells: {doc['failed']}")
    if sorted(r["vcpus"] for r in doc["results"]) != [1, 2]:
        bad.append(f"results for vCPUs {[r['vcpus'] for r in doc['results']]}: want 1 and 2")
    if sorted({r["host"] for r in doc["results"]}) != sorted(labels):
        bad.append(f"results from hosts {sorted({r['host'] for r in doc['results']})}: want both of {labels}"
                   " (two cells, one machine per host)")
    if [r["host"] for r in rows] != [r["host"] for r in doc["results"]] or any(r["status"] != "ok" for r in rows):
        bad.append(f"CSV rows {[(r['host'], r['status']) for r in rows]} do not match the JSON's results")
    for b in bad:
        print(f"FAILED: {b}")
    if not bad:
        print(f"sweep ok: {len(doc['results'])} results from hosts {', '.join(labels)}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
