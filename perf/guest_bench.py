"""What the guest benchmark drivers share (perf/bench_*.py): the platforms a
guest program runs on, the machine description, progress on stderr, and
the guest's `bench KEY=VALUE ...` result lines.

A guest benchmark program (guest/bench/NAME) is written against the guest
runtime only, so each platform just says how to launch it: the sim runs it as
a host process; on the bare-metal hypervisor under QEMU it is the guest kernel
build/guest/platform/xenpv/bench/NAME/kernel, booted by pvmmu-run as an xl.cfg
domain whose `extra` carries the KEY=VALUE words (they reach the guest as
start_info.cmd_line, docs/abi.md §10). The same kernel runs on Xen 4.17 as
dom0 (`--platform xen`), so one run can put both hypervisors side by side,
and, run in the dom0 of a Xen host, as a domU of that host's Xen
(`--platform xen-host`). `--platform libvirt[=URI]` boots the same machine as
pvmmu-run's qemu back end as a libvirt domain (pvmmu-run --platform
libvirt[=URI]; default the embedded driver in the build tree, no daemon).
"""
import argparse
import os
import platform as host
import shutil
import subprocess
import sys
import tempfile
import time


class Unavailable(Exception):
    """The platform cannot run guest programs (yet), or a tool is missing."""


class SimPlatform:
    """The simulated machine: each guest program is a host process.
    flags: options of the sim's main() (--interleave, --tlb-caches-invalid)."""

    name = "sim"
    hypervisor = "pvmmu"
    native_args = []   # rt::native_pte_cmpxchg works: the sim lets the guest write its PTEs
    lacks_modes = {}

    def __init__(self, build, flags=()):
        self.build = build
        self.flags = list(flags)

    def command(self, program, vcpus, args):
        binary = os.path.join(self.build, "guest", "bench", program, f"guest-{program}")
        if not os.access(binary, os.X_OK):
            raise Unavailable(f"{binary} is not built (./pvmmu build)")
        return [binary, "--cpus", str(vcpus)] + self.flags + args

    def succeeded(self, returncode, lines):
        return returncode == 0 and bool(lines) and lines[-1] == "Test result: SUCCESS"

    def machine(self):
        return f"sim on {host_machine()}"


class QemuPlatform:
    """A hypervisor under QEMU, one CPU per vCPU: the program's guest kernel as
    the one domain of an xl.cfg file (its size from the sim build's --info, the
    KEY=VALUE words in `extra`), run by `pvmmu-run --platform P --accel ACCEL
    --config FILE`. hypervisor 'pvmmu' (P qemu: the bare-metal hypervisor; P
    libvirt[=URI]: the same machine started through libvirt, `uri` None for
    pvmmu-run's default) or 'xen' (P xen: Debian's Xen 4.17, the guest its
    dom0). On pvmmu the native
    mode needs the benchmark-only, UNSAFE module word `unsafe-native-pt`
    (docs/abi.md §10): only with it does the hypervisor alias the domain's
    frames, page tables included, writable to it, so rt::native_pte_cmpxchg
    works. Xen has no such window and no MMU_FLAG_RANGE_UPDATE: those modes
    are not run there (the guest would fall back to cmd-2 arrays)."""

    timeout_s = 1800   # per guest run; TCG is slow

    def __init__(self, build, accel, hypervisor="pvmmu", libvirt=False, uri=None):
        self.build = build
        self.accel = accel
        self.hypervisor = hypervisor
        self.launcher_platform = "libvirt" if libvirt else "qemu" if hypervisor == "pvmmu" else "xen"
        self.uri = uri
        self.name = f"{self.launcher_platform}-{accel}"
        self.tmp = None
        if hypervisor == "pvmmu":
            self.native_args, self.lacks_modes = ["unsafe-native-pt"], {}
        else:
            window = "pvmmu's unsafe-native-pt window (the guest writes its own PTEs)"
            self.native_args = None
            self.lacks_modes = {"native": window, "unsafe": window,
                                "flag-range": "MMU_FLAG_RANGE_UPDATE (pvmmu's cmd 4)"}

    def command(self, program, vcpus, args):
        if not shutil.which("qemu-system-x86_64"):
            raise Unavailable("qemu-system-x86_64 is not installed (tools/deps.txt)")
        if self.accel == "kvm" and self.hypervisor == "xen":
            raise Unavailable("Xen 4.17 does not run under the nested KVM of these machines; "
                              "use --accel tcg or tcg-icount")
        # A remote libvirt host's KVM is its own, not this machine's /dev/kvm.
        if self.accel == "kvm" and not (self.uri and remote(self.uri)) \
                and not os.access("/dev/kvm", os.R_OK | os.W_OK):
            raise Unavailable("/dev/kvm is not usable here; try --accel tcg")
        platform = self.launcher_platform + (f"={self.uri}" if self.uri else "")
        return [self.runner(), "--platform", platform, "--accel", self.accel, "--timeout",
                str(self.timeout_s), "--config", self.config(program, vcpus, args)]

    def runner(self):
        return os.path.join(self.build, "tools", "pvmmu-run")

    def config(self, program, vcpus, args):
        """The xl.cfg file of the program's domain (written once per run)."""
        runner = self.runner()
        # Absolute: a libvirt domain's QEMU does not run in this folder.
        kernel = os.path.abspath(os.path.join(self.build, "guest", "platform", "xenpv", "bench", program, "kernel"))
        sim = os.path.join(self.build, "guest", "bench", program, f"guest-{program}")
        for f in (runner, kernel, sim):
            if not os.access(f, os.R_OK):
                raise Unavailable(f"{f} is not built (./pvmmu build)")
        info = subprocess.run([sim, "--info"], capture_output=True, text=True).stdout
        frames = next((int(x.split(":", 1)[1]) for x in info.splitlines() if x.startswith("frames:")), 16384)
        if self.tmp is None:
            self.tmp = tempfile.TemporaryDirectory(prefix="pvmmu-bench-")
        cfg = os.path.join(self.tmp.name, f"{program}-{vcpus}.cfg")
        with open(cfg, "w") as f:
            f.write(f'name = "{program}"\nvcpus = {vcpus}\nmemory = {-(-frames // 256)}\n'
                    f'kernel = "{kernel}"\nextra = "{" ".join(args)}"\n')
        return cfg

    def succeeded(self, returncode, lines):
        # The hypervisor and pvmmu-run print after the guest: its result is
        # the last `Test result:` line.
        results = [x for x in lines if x.startswith("Test result: ")]
        return returncode == 0 and bool(results) and results[-1] == "Test result: SUCCESS"

    def machine(self):
        what = "pvmmu" if self.hypervisor == "pvmmu" else "Xen 4.17 (Debian's, dom0)"
        if self.launcher_platform == "libvirt":
            where = self.uri or "pvmmu-run's default, qemu:///embed in the build tree"
            return f"{what} under qemu ({self.accel}) as a libvirt domain ({where}) on {host_machine()}"
        return f"{what} under qemu ({self.accel}) on {host_machine()}"


class XenHostPlatform(QemuPlatform):
    """The Xen host this driver runs on, from its dom0: the
    program's guest kernel as a PV domU of that host's Xen, created through
    libxenlight by `pvmmu-run --platform xen-host --config FILE`. Xen's
    modes only, as for --platform xen; no emulator, so no --accel (times are
    the host CPU's)."""

    timeout_s = 600

    def __init__(self, build):
        super().__init__(build, "host", "xen")
        self.launcher_platform = self.name = "xen-host"

    def command(self, program, vcpus, args):
        caps = ""
        try:
            with open("/proc/xen/capabilities") as f:
                caps = f.read()
        except OSError:
            pass
        if "control_d" not in caps:
            raise Unavailable("--platform xen-host runs in the dom0 of a Xen host (no control_d in "
                              "/proc/xen/capabilities here)")
        return [self.runner(), "--platform", "xen-host", "--timeout", str(self.timeout_s),
                "--config", self.config(program, vcpus, args)]

    def machine(self):
        return f"Xen (this host's, the guest a domU) on {host_machine()}"


PLATFORMS = ["sim", "qemu", "xen", "xen-host", "libvirt[=URI]"]


def remote(uri):
    """Whether a libvirt URI names another machine (a host after "scheme://"),
    as pvmmu-run's libvirt_uri_remote decides: it uploads the images there,
    and that host's KVM is not known here."""
    _, sep, rest = uri.partition("://")
    return bool(sep) and bool(rest) and not rest.startswith("/")


_auto_accel = {}


def auto_accel(build, hypervisor):
    """--accel auto: what pvmmu-run itself would take — KVM only where /dev/kvm
    passes its self-test (`pvmmu-run --kvm-self-test`, cached in the build
    tree), otherwise TCG with pvmmu-run's line saying why. Xen 4.17 does not
    run under these machines' nested KVM: always TCG."""
    if hypervisor == "xen":
        return "tcg"
    if build not in _auto_accel:
        runner = os.path.join(build, "tools", "pvmmu-run")
        r = subprocess.run([runner, "--kvm-self-test"], capture_output=True, text=True)
        _auto_accel[build] = "kvm" if r.returncode == 0 else "tcg"
        print((r.stdout.strip() or "pvmmu-run: no KVM verdict") + f" -> --accel {_auto_accel[build]}",
              file=sys.stderr)
    return _auto_accel[build]


def make_platform(name, build, accel="auto", flags=()):
    if accel == "auto" and name not in ("sim", "xen-host"):
        uri = name.partition("=")[2] if name.startswith("libvirt=") else ""
        accel = "tcg" if uri and remote(uri) else auto_accel(build, "xen" if name == "xen" else "pvmmu")
    if name == "sim":
        return SimPlatform(build, flags)
    if name == "libvirt" or name.startswith("libvirt="):
        return QemuPlatform(build, accel, "pvmmu", libvirt=True, uri=name.partition("=")[2] or None)
    if name == "xen-host":
        return XenHostPlatform(build)
    return QemuPlatform(build, accel, "xen" if name == "xen" else "pvmmu")


def platform_list(s):
    """An argparse type: comma-separated platforms, each once, in the order given."""
    v = [x for x in s.split(",") if x]
    known = ("sim", "qemu", "xen", "xen-host", "libvirt")
    unknown = [x for x in v if x not in known and not (x.startswith("libvirt=") and len(x) > len("libvirt="))]
    if unknown or not v or len(set(v)) != len(v):
        raise argparse.ArgumentTypeError(f"platforms are {', '.join(PLATFORMS)}, each at most once")
    return v


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
    """Progress on stderr once the run has taken longer than a second: on a
    terminal one status line, rewritten in place; otherwise (piped, in a log)
    plain lines, one when a run starts and one every 10 s while it goes on, so
    a long benchmark is not silent there either."""

    PLAIN_EVERY = 10.0

    def __init__(self, total):
        self.total, self.done, self.start = total, 0, time.monotonic()
        self.live = sys.stderr.isatty()
        self.shown = False
        self.plain_done, self.plain_at = -1, 0.0

    def step(self, what):
        now = time.monotonic()
        if now - self.start < 1.0:
            return
        line = f"[{min(self.done + 1, self.total)}/{self.total}] {what} ({now - self.start:.0f} s)"
        if self.live:
            self.shown = True
            sys.stderr.write(f"\r\033[K{line}")
        elif self.done != self.plain_done or now - self.plain_at >= self.PLAIN_EVERY:
            self.plain_done, self.plain_at = self.done, now
            sys.stderr.write(f"progress: {line}\n")
        else:
            return
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
    if not plat.succeeded(proc.returncode, lines):
        raise RuntimeError(f"{' '.join(cmd)} failed (exit {proc.returncode}):\n" + "\n".join(lines[-20:]))
    return [parse_line(x) for x in lines if x.startswith("bench ")]


def spread(values):
    """(median, min, max) of a list of numbers."""
    v = sorted(values)
    mid = len(v) // 2
    median = v[mid] if len(v) % 2 else (v[mid - 1] + v[mid]) / 2
    return median, v[0], v[-1]


def count(most=None):
    """An argparse type: a whole number 1..most (no bound if most is None)."""
    def parse(s):
        try:
            n = int(s)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {s}")
        if n < 1 or (most is not None and n > most):
            raise argparse.ArgumentTypeError(f"must be 1..{most}" if most else "must be positive")
        return n
    return parse


def name_list(names, what):
    """An argparse type: comma-separated names out of `names` (at least one),
    returned in the order of `names`; `what` names them in the error."""
    def parse(s):
        v = [x for x in s.split(",") if x]
        unknown = [x for x in v if x not in names]
        if unknown or not v:
            raise argparse.ArgumentTypeError(f"unknown {what}(s) {', '.join(unknown)}; {what}s: {', '.join(names)}")
        return [n for n in names if n in v]
    return parse


def vcpu_list(most):
    """An argparse type: comma-separated vCPU counts, each 1..most, sorted."""
    def parse(s):
        try:
            v = [int(x) for x in s.split(",") if x]
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a list of numbers: {s}")
        if not v or any(x < 1 or x > most for x in v):
            raise argparse.ArgumentTypeError(f"vCPU counts must be 1..{most}")
        return sorted(set(v))
    return parse


def common_args(ap):
    """The options every guest benchmark driver takes."""
    ap.add_argument("--platform", type=platform_list, default=["sim"], metavar="P[,P...]",
                    help="where the guest runs: sim, qemu (pvmmu under QEMU), xen (Xen 4.17 under QEMU, the "
                         "guest its dom0), xen-host (run in a Xen host's dom0: the guest a domU of that Xen), "
                         "libvirt[=URI] (pvmmu under QEMU as a libvirt domain; default URI: the embedded "
                         "driver, no daemon); several, comma-separated, run side by side (default sim)")
    ap.add_argument("--accel", choices=["auto", "kvm", "tcg", "tcg-icount"], default="auto",
                    help="QEMU accelerator (qemu, xen, libvirt); auto (default): KVM where /dev/kvm passes "
                         "pvmmu-run's self-test, else TCG; tcg-icount: every instruction takes 1 ns of "
                         "virtual time, so times count instructions")
    ap.add_argument("--runs", type=count(), default=5, help="runs; medians are reported (default 5)")
    ap.add_argument("--json", metavar="FILE", help="write the results as JSON")
    ap.add_argument("--build-dir", default=default_build_dir(), help=argparse.SUPPRESS)


def report_check(bad, results):
    """Prints a --check's outcome: each failed target on stderr, or one line
    that all held. Returns the exit status (1 if any failed)."""
    for b in bad:
        print(f"CHECK FAILED: {b}", file=sys.stderr)
    if bad:
        return 1
    print(f"\ncheck: every exact target holds ({results} results)")
    return 0


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
