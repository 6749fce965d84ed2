#!/usr/bin/env python3
"""Unit tests of perf/linux_report.py's check, the targets `./pvmmu bench
linux --check` holds (docs/results.md §13): pvmmu's overhead over native at
most half of Xen's, and pvmmu never dearer than Xen, in every cell; made-up
figures, no machine is started."""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "perf"))
from linux_report import check  # noqa: E402


def doc(cells, platforms=("native", "xen", "pvmmu")):
    """cells: {(workload, vCPUs): (native, xen, pvmmu)}, None for no figure."""
    results = []
    for (wl, v), figures in cells.items():
        for plat, ipp in zip(("native", "xen", "pvmmu"), figures):
            if ipp is not None and plat in platforms:
                results.append({"platform": plat, "workload": wl, "vcpus": v, "instructions_per_page": ipp})
    return {"platforms": list(platforms), "results": results,
            "params": {"workloads": sorted({wl for wl, _ in cells}), "vcpus": sorted({v for _, v in cells})}}


class CheckTest(unittest.TestCase):
    def test_overhead_at_exactly_half_of_xens_holds(self):
        self.assertEqual(check(doc({("fork", 1): (100.0, 300.0, 200.0)})), ([], None))

    def test_overhead_above_half_of_xens_fails_that_cell(self):
        bad, why = check(doc({("fork", 1): (100.0, 300.0, 200.1), ("fork", 2): (100.0, 300.0, 150.0)}))
        self.assertIsNone(why)
        self.assertEqual(len(bad), 1)
        self.assertIn("fork, 1 vCPU(s)", bad[0])

    def test_pvmmu_dearer_than_xen_fails_even_below_native(self):
        # Xen cheaper than native: half of its (negative) overhead is a target no dearer pvmmu meets.
        bad, _ = check(doc({("fault", 4): (100.0, 90.0, 96.0)}))
        self.assertEqual(len(bad), 2)
        self.assertTrue(any("pvmmu 96.0 > Xen 90.0" in b for b in bad))

    def test_a_cell_without_every_figure_fails(self):
        bad, _ = check(doc({("threads", 2): (100.0, None, 150.0)}))
        self.assertEqual(bad, ["threads, 2 vCPU(s): a platform has no figure"])

    def test_a_run_without_every_platform_cannot_be_checked(self):
        bad, why = check(doc({("fork", 1): (100.0, None, 150.0)}, platforms=("native", "pvmmu")))
        self.assertIsNone(bad)
        self.assertIn("native,xen,pvmmu", why)


if __name__ == "__main__":
    unittest.main()
