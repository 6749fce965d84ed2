"""What the guest benchmark drivers share (perf/bench_*.py): the platforms a
guest program runs on, the machine description, progress on a terminal, and
the guest's `bench KEY=VALUE ...` result lines.

A guest benchmark program (guest/bench/NAME) is written against the guest
runtime only, so each platform just says how to launch it: the sim runs it as
a host process; the bare-metal hypervisor under QEMU will run it with
`./pvmmu run --platform qemu NAME KEY=VALUE...` once it runs guest domains.
"""
import argparse
import os
import platform as host
import subprocess
import sys
import time


class Unavailable(Exception):
    """The platform cannot run guest programs (yet), or a tool is missing."""


class SimPlatform:
    """The simulated machine: each guest program is a host process.
    flags: options of the sim's main() (--interleave, --tlb-caches-invalid)."""

    name = "sim"

    def __init__(self, build, flags=()):
        self.build = build
        self.flags = list(flags)

    def command(self, program, vcpus, args):
        binary = os.path.join(self.build, "guest", "bench", program, f"guest-{program}")
        if not os.access(binary, os.X_OK):
            raise Unavailable(f"{binary} is not built (./pvmmu build)")
        return [binary, "--cpus", str(vcpus)] + self.flags + args

    def machine(self):
        return f"sim on {host_machine()}"


class QemuPlatform:
    """The bare-metal hypervisor under QEMU. Refuses until the hypervisor can
    run guest domains (issue 6); then command() returns
    ./pvmmu run --platform qemu --accel ACCEL --cpus N PROGRAM ARGS."""

    def __init__(self, accel):
        self.accel = accel
        self.name = f"qemu-{accel}"

    def command(self, program, vcpus, args):
        raise Unavailable(
            "the bare-metal platform cannot run guest programs yet: the hypervisor image boots "
            "(./pvmmu boot) but guest domains on it are still to come (issue 6); use --platform sim")

    def machine(self):
        return f"qemu ({self.accel}) on {host_machine()}"


def make_platform(name, build, accel="kvm", flags=()):
    return SimPlatform(build, flags) if name == "sim" else QemuPlatform(accel)


def default_build_dir():
    return os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "build")


def host_machine():
    model = ""
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        for line in out.splitlines():
            if line.startswith("Model name:"):
                model = line.split(":", 1)[1].strip()
    except OSError:
        pass
    return f"{model or host.processor() or 'unknown CPU'}, {os.cpu_count()} CPUs, Linux {host.release()}"


def utc_now():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class Progress:
    """One status line on stderr, only when it is a terminal and the run has
    taken longer than a second."""

    def __init__(self, total):
        self.total, self.done, self.start = total, 0, time.monotonic()
        self.live = sys.stderr.isatty()
        self.shown = False

    def step(self, what):
        if not self.live or time.monotonic() - self.start < 1.0:
            return
        self.shown = True
        elapsed = time.monotonic() - self.start
        sys.stderr.write(f"\r\033[K[{min(self.done + 1, self.total)}/{self.total}] {what} ({elapsed:.0f} s)")
        sys.stderr.flush()

    def advance(self):
        self.done += 1

    def end(self):
        if self.shown:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()


def parse_line(line):
    fields = {}
    for word in line.split()[1:]:
        key, _, value = word.partition("=")
        fields[key] = value
    return fields


def run_program(plat, program, vcpus, args, progress, what, expected=0):
    """Runs one guest program; returns its `bench` lines as dicts. Raises
    RuntimeError unless its last line is `Test result: SUCCESS`."""
    cmd = plat.command(program, vcpus, args)
    progress.step(what)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines, results = [], 0
    for line in proc.stdout:
        lines.append(line.rstrip("\n"))
        if line.startswith("bench "):
            results += 1
            progress.step(f"{what}: {results}" + (f" of {expected}" if expected else "") + " measurements")
    proc.wait()
    progress.advance()
    if proc.returncode != 0 or not lines or lines[-1] != "Test result: SUCCESS":
        raise RuntimeError(f"{' '.join(cmd)} failed (exit {proc.returncode}):\n" + "\n".join(lines[-20:]))
    return [parse_line(x) for x in lines if x.startswith("bench ")]


def spread(values):
    """(median, min, max) of a list of numbers."""
    v = sorted(values)
    mid = len(v) // 2
    median = v[mid] if len(v) % 2 else (v[mid - 1] + v[mid]) / 2
    return median, v[0], v[-1]


def common_args(ap):
    """The options every guest benchmark driver takes."""
    ap.add_argument("--platform", choices=["sim", "qemu"], default="sim",
                    help="where the guest runs (qemu: the bare-metal hypervisor, not available yet)")
    ap.add_argument("--accel", choices=["kvm", "tcg"], default="kvm", help="QEMU accelerator (--platform qemu)")
    ap.add_argument("--runs", type=int, default=5, help="runs; medians are reported (default 5)")
    ap.add_argument("--json", metavar="FILE", help="write the results as JSON")
    ap.add_argument("--build-dir", default=default_build_dir(), help=argparse.SUPPRESS)


def write_json(path, doc):
    import json
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


def command_line(name):
    """How the benchmark was started, as a person would type it (without the
    --build-dir that ./pvmmu adds)."""
    args, skip = [], False
    for a in sys.argv[1:]:
        if skip:
            skip = False
        elif a == "--build-dir":
            skip = True
        elif not a.startswith("--build-dir="):
            args.append(a)
    return " ".join([f"./pvmmu bench {name}"] + args)
