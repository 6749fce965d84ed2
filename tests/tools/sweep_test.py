#!/usr/bin/env python3
"""Unit tests of perf/sweep.py: the scheduler (at most N
machines per host, cells spread over the hosts or run on every host, a failed
cell reported) and the merge (the host column, failed cells kept, %native per
host), with a fake run and made-up rows: no machine is started."""
import csv
import os
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "perf"))
import guest_bench  # noqa: E402
import sweep  # noqa: E402


class Recorder:
    """A run that counts the jobs on each host at once. With `gate` (hosts and
    a count), each job waits until every one of those hosts has had that many
    jobs running at once (or 30 s pass): so a test of the most a host runs
    together does not depend on how the threads happen to be scheduled."""

    def __init__(self, fail=(), gate=None):
        self.lock = threading.Condition()
        self.now, self.most, self.ran, self.slots = {}, {}, [], {}
        self.fail = set(fail)
        self.gate = gate

    def _gate_open(self):
        hosts, want = self.gate
        return all(self.most.get(h, 0) >= want for h in hosts)

    def __call__(self, host, slot, cell):
        with self.lock:
            self.now[host] = self.now.get(host, 0) + 1
            self.most[host] = max(self.most.get(host, 0), self.now[host])
            busy = self.slots.setdefault(host, set())
            assert slot not in busy, f"slot {slot} of {host} given twice at once"
            busy.add(slot)
            self.ran.append((host, cell))
            if self.gate:
                self.lock.notify_all()
                self.lock.wait_for(self._gate_open, timeout=30)
        time.sleep(0.02)
        with self.lock:
            self.now[host] -= 1
            self.slots[host].discard(slot)
        if (host, cell) in self.fail:
            raise RuntimeError(f"{cell} broke on {host}")
        return f"{cell}@{host}"


class ScheduleTest(unittest.TestCase):
    def test_one_machine_per_host_by_default(self):
        rec = Recorder(gate=(["a", "b"], 1))
        jobs = sweep.make_jobs(list(range(12)), ["a", "b"], every_host=False)
        out = sweep.schedule(jobs, ["a", "b"], 1, rec)
        self.assertEqual(rec.most, {"a": 1, "b": 1})
        self.assertEqual(len(rec.ran), 12, "every cell once")
        self.assertEqual(sorted(c for _, c, _, _ in out), list(range(12)))
        self.assertTrue(all(e is None for *_, e in out))
        # Spread: both hosts took cells.
        self.assertGreater(sum(1 for h, _ in rec.ran if h == "a"), 0)
        self.assertGreater(sum(1 for h, _ in rec.ran if h == "b"), 0)

    def test_per_host_allows_that_many_at_once(self):
        rec = Recorder(gate=(["a", "b"], 3))
        jobs = sweep.make_jobs(list(range(16)), ["a", "b"], every_host=False)
        sweep.schedule(jobs, ["a", "b"], 3, rec)
        self.assertEqual(rec.most, {"a": 3, "b": 3})
        self.assertEqual(len(rec.ran), 16)

    def test_every_host_runs_each_cell_on_each_host(self):
        rec = Recorder()
        jobs = sweep.make_jobs(["x", "y", "z"], ["a", "b"], every_host=True)
        out = sweep.schedule(jobs, ["a", "b"], 1, rec)
        self.assertEqual(sorted(rec.ran), sorted((h, c) for h in "ab" for c in "xyz"))
        self.assertEqual([(h, c, r) for h, c, r, _ in out],
                         [(h, c, f"{c}@{h}") for c in "xyz" for h in "ab"], "results in the jobs' order")

    def test_a_failed_cell_is_reported_not_dropped(self):
        rec = Recorder(fail={("b", "y")})
        jobs = sweep.make_jobs(["x", "y", "z"], ["a", "b"], every_host=True)
        events = []
        out = sweep.schedule(jobs, ["a", "b"], 1, rec, lambda ev, h, j, i, o: events.append((ev, h, j.cell)))
        failed = [(h, c, e) for h, c, _, e in out if e is not None]
        self.assertEqual(failed, [("b", "y", "y broke on b")])
        self.assertEqual(len(out), 6)
        self.assertEqual(sum(1 for e in events if e[0] == "start"), 6)
        self.assertEqual(sum(1 for e in events if e[0] == "end"), 6)

    def test_a_job_without_a_host_fails(self):
        out = sweep.schedule([sweep.Job("x", [])], ["a"], 1, Recorder())
        self.assertIsNone(out[0][0])
        self.assertIn("none of its hosts", out[0][3])


class HostsTest(unittest.TestCase):
    def test_labels_tell_one_machine_apart(self):
        self.assertEqual(sweep.host_labels([("u1", {"hostname": "vm"}), ("u2", {"hostname": "vm"}),
                                            ("u3", {"hostname": "big"}), ("u4", None),
                                            ("qemu+ssh://bench1/system", None)]),
                         ["vm#1", "vm#2", "big", "host", "bench1"])

    def test_embed_slots_get_roots_of_their_own(self):
        self.assertEqual(sweep.slot_uri("qemu:///embed?root=/r", 0), "qemu:///embed?root=/r")
        self.assertEqual(sweep.slot_uri("qemu:///embed?root=/r", 2), "qemu:///embed?root=/r.slot2")
        self.assertEqual(sweep.slot_uri("qemu+tcp://h/system", 2), "qemu+tcp://h/system")

    def test_remote(self):
        self.assertTrue(guest_bench.remote("qemu+ssh://host/system"))
        self.assertTrue(guest_bench.remote("qemu+tcp://127.0.0.1/system"))
        self.assertFalse(guest_bench.remote("qemu:///system"))
        self.assertFalse(guest_bench.remote("qemu:///embed?root=/x"))
        self.assertFalse(guest_bench.remote("test:///default"))


def row(mode, wl, v, rate):
    return {"hypervisor": "pvmmu", "platform": "libvirt", "mode": mode, "workload": wl, "vcpus": v,
            "pte_updates_per_s": rate, "pte_updates_per_s_min": rate, "pte_updates_per_s_max": rate,
            "pct_of_native": None, "instructions_per_pte": None, "hypercalls_per_512_ptes": 1.0,
            "tlb_flushes_local_per_mprotect": 0.5, "tlb_flushes_remote_per_mprotect": 0.0, "ad_lost": 0}


class MergeTest(unittest.TestCase):
    HOSTS = [{"label": "a", "uri": "qemu:///embed?root=/a", "description": {}, "error": None},
             {"label": "b", "uri": "qemu:///embed?root=/b", "description": {}, "error": None}]

    def outcomes(self):
        return [("b", ("private", 1, "native"), [row("native", "private", 1, 1000)], None),
                ("a", ("private", 1, "native"), [row("native", "private", 1, 4000)], None),
                ("a", ("private", 1, "flag-range"), [row("flag-range", "private", 1, 2000)], None),
                ("b", ("private", 1, "flag-range"), [row("flag-range", "private", 1, 500)], None),
                ("b", ("private", 2, "per-pte"), None, "pvmmu-run ... failed (exit 6):\ntimed out")]

    def test_reason_is_the_launchers_verdict(self):
        self.assertEqual(sweep.reason("/x/pvmmu-run --platform libvirt=u failed (exit 6):\nconsole\n"
                                      "pvmmu-run: CRASHED (exit 6): timed out after 5 s\npvmmu-run: done"),
                         "pvmmu-run: CRASHED (exit 6): timed out after 5 s")
        self.assertEqual(sweep.reason("host b could not be described: x"), "host b could not be described: x")

    def test_host_column_and_failed_cells(self):
        results, failed = sweep.merge(self.HOSTS, self.outcomes())
        self.assertEqual([(r["host"], r["mode"]) for r in results],
                         [("a", "flag-range"), ("a", "native"), ("b", "flag-range"), ("b", "native")])
        self.assertEqual([r["uri"] for r in results][:1], ["qemu:///embed?root=/a"])
        self.assertEqual(failed, [{"host": "b", "workload": "private", "vcpus": 2, "mode": "per-pte",
                                   "error": "pvmmu-run ... failed (exit 6):\ntimed out"}])

    def test_pct_of_native_within_one_host(self):
        results, _ = sweep.merge(self.HOSTS, self.outcomes())
        pct = {(r["host"], r["mode"]): r["pct_of_native"] for r in results}
        self.assertEqual(pct[("a", "flag-range")], 50.0)
        self.assertEqual(pct[("b", "flag-range")], 50.0)
        self.assertEqual(pct[("a", "native")], 100.0)

    def test_csv_has_a_host_column_and_the_failed_cell(self):
        results, failed = sweep.merge(self.HOSTS, self.outcomes())
        doc = {"hosts": self.HOSTS, "results": results, "failed": failed}
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "s.csv")
            sweep.write_csv(doc, path)
            with open(path) as f:
                rows = list(csv.DictReader(f))
        self.assertEqual(list(rows[0].keys())[:2], ["host", "uri"])
        self.assertEqual([(r["host"], r["mode"], r["status"]) for r in rows],
                         [("a", "flag-range", "ok"), ("a", "native", "ok"), ("b", "flag-range", "ok"),
                          ("b", "native", "ok"), ("b", "per-pte", "failed")])
        self.assertEqual(rows[-1]["uri"], "qemu:///embed?root=/b")
        self.assertIn("timed out", rows[-1]["error"])
        self.assertEqual(rows[-1]["pte_updates_per_s"], "")

    def test_table_names_the_failed_cell(self):
        import io
        results, failed = sweep.merge(self.HOSTS, self.outcomes())
        doc = {"hosts": self.HOSTS, "results": results, "failed": failed, "date": "2026-12-01T00:00:00Z",
               "accel": "tcg", "params": {"pages": 64, "runs": 1, "epochs": 1, "cycles": 1, "per_host": 1,
                                          "every_host": True}}
        out = io.StringIO()
        sweep.print_table(doc, out, str)
        text = out.getvalue()
        self.assertRegex(text, r"\nb +private +2 per-pte +FAILED: pvmmu-run ... failed \(exit 6\):\n")
        self.assertIn("4 results, 1 failed cell(s)", text)


class HostileHostTest(unittest.TestCase):
    """What a remote host says (--describe-host's JSON) is untrusted: its
    hostname reaches gnuplot's script and the terminal."""

    EVIL = "vm'\n!touch /tmp/pvmmu-sweep-pwned\n\x1b]0;title\x07"

    def test_a_label_keeps_only_a_hostnames_characters(self):
        self.assertEqual(sweep.host_labels([("u1", {"hostname": self.EVIL})]),
                         ["vm___touch__tmp_pvmmu-sweep-pwned___0_title_"])

    def test_a_description_reaches_the_terminal_without_control_characters(self):
        d = sweep.scrubbed({"hostname": self.EVIL, "cpus": 4, "cpu_model": "x\x9b31m", "list": ["\x1b[2J"]})
        self.assertEqual(d["hostname"], "vm'?!touch /tmp/pvmmu-sweep-pwned??]0;title?")
        self.assertEqual(d["cpus"], 4)
        self.assertEqual(d["cpu_model"], "x?31m")
        self.assertEqual(d["list"], ["?[2J"])

    def test_gnuplots_script_runs_no_command_whatever_the_label(self):
        # A label that did not come through host_labels (a document merged
        # from elsewhere): still no line of the script is a command of its own.
        import shutil
        import subprocess
        seen = {}

        def fake_run(cmd, input=None, **kw):
            seen["script"] = input
            return subprocess.CompletedProcess(cmd, 0, "", "")

        results = [dict(row("native", "private", 1, 1000), host=self.EVIL, uri="u")]
        doc = {"results": results, "date": "2026-12-07T00:00:00Z"}
        old_run, old_which = sweep.subprocess.run, shutil.which
        sweep.subprocess.run, shutil.which = fake_run, lambda name: "/usr/bin/" + name
        try:
            sweep.write_plot(doc, "/tmp/plot.svg")
        finally:
            sweep.subprocess.run, shutil.which = old_run, old_which
        lines = seen["script"].splitlines()
        self.assertFalse([ln for ln in lines if ln.lstrip().startswith(("!", "system", "shell"))], lines)
        self.assertTrue(all(ord(c) >= 0x20 for ln in lines for c in ln), lines)
        self.assertEqual(len(lines), 12, lines)   # the commands written, no more

    def test_an_output_path_with_a_line_end_is_refused(self):
        import shutil
        old_which = shutil.which
        shutil.which = lambda name: "/usr/bin/" + name
        try:
            with self.assertRaises(ValueError):
                sweep.write_plot({"results": [dict(row("native", "private", 1, 1), host="h", uri="u")],
                                  "date": "2026-12-07"}, "/tmp/x\n!id.svg")
        finally:
            shutil.which = old_which


if __name__ == "__main__":
    unittest.main()
