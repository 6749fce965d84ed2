// pvmmu-run: runs guest programs and reports their outcome (docs/design.md §6, the Xen
// Test Framework's runner). Each program runs as a child process with its
// console captured and echoed; the last console line must be
// `Test result: SUCCESS|SKIP|ERROR|FAILURE`, mapped to the exit codes 0/3/4/5.
// A program that crashes, prints no result, ends with a status other than its
// result's, or outlives --timeout gives 6 (it is killed, so a hung guest never
// hangs the runner). Several programs: the worst code. Usage errors: 2.
// --platform sim runs the test's sim program; qemu, xen and bochs are back
// ends (run_backend.h) booting its guest kernel (guest/platform/xenpv): on
// pvmmu under QEMU, on Xen 4.17 under QEMU, on pvmmu from its ISO under
// Bochs. They share the domain list and the judgement (run_child.cc).
// --fuzz boots the hostile guest (tests/qemu/hostile_guest) from a seed next
// to a well-behaved guest program and judges the run by the console
// (docs/security.md §7.10).
#include <cctype>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "bzimage.h"
#include "input_file.h"
#include "kvm_probe.h"
#include "run_backend.h"
#include "run_domains.h"
#include "run_libvirt.h"
#include "xl_config.h"

#include <unistd.h>

namespace {

using namespace pvmmu::run;

struct Program {
    const char* name;
    const char* path;     // the sim program
    const char* kernel;   // the guest kernel for the bare-metal hypervisor
};

const Program kPrograms[] = {
#include "pvmmu-run-programs.inc"
};

// --fuzz: the hostile guest's run (its module words, docs/security.md §7.10).
struct FuzzOptions {
    bool on = false;
    bool seed_set = false;
    unsigned long long seed = 0;
    unsigned long long ops = 0;        // 0: 100000, or no limit when time_s is given
    unsigned long long time_s = 0;     // 0: no limit
    unsigned long long check = 1000;   // the invariant check every N operations
    unsigned long long trace = 0;      // print every operation from this one on (0: none)
    bool trace_set = false;
    bool edges = true;                 // SYSCALL at the canonical boundary
    std::string with = "tlb-shootdown";   // the well-behaved domain's program, or "none"
};

struct RunOptions : Options {
    std::vector<std::string> names;
    std::vector<std::string> configs;   // --config: xl.cfg files, one domain each
    FuzzOptions fuzz;
};

void usage(FILE* f)
{
    std::fprintf(f,
        "usage: pvmmu-run [--platform sim|qemu|xen|xen-host|bochs|libvirt[=URI]] [--accel kvm|tcg|tcg-icount]\n"
        "                 [--cpus N] [--timeout SECONDS] [--hv-args WORDS] [--quiet] [--console] NAME...\n"
        "       pvmmu-run [--platform qemu|xen|xen-host|bochs|libvirt[=URI]] [--accel kvm|tcg|tcg-icount]\n"
        "                 [--timeout SECONDS] [--quiet] [--console] --config FILE...\n"
        "       pvmmu-run --list\n"
        "       pvmmu-run --platform libvirt[=URI] --describe-host\n"
        "       pvmmu-run --kvm-self-test\n"
        "       pvmmu-run [--cpus N] --boot-args NAME\n"
        "       pvmmu-run [--accel kvm|tcg|tcg-icount] [--cpus N] [--hv-args WORDS] --print-xml NAME\n"
        "       pvmmu-run --fuzz [--seed N] [--ops N] [--time S] [--check N] [--trace N] [--no-edges]\n"
        "                 [--with NAME|none] [--accel kvm|tcg|tcg-icount] [--timeout SECONDS] [--quiet]\n"
        "\n"
        "Runs the guest programs NAME... (guest/tests/<NAME>/) one after the other and\n"
        "exits with the worst outcome:\n"
        "  0 SUCCESS, 3 SKIP, 4 ERROR (the test is broken), 5 FAILURE (what it tests is),\n"
        "  6 crashed, timed out, printed no `Test result:` line last, or exited with\n"
        "    another status than that line's; 7 REFUSED: the hypervisor did not build\n"
        "    a domain (its image, size or words; the domain and the reason are named);\n"
        "  2 usage error (a config or kernel file that cannot be read or is refused);\n"
        "  128+N interrupted by signal N (SIGINT, SIGTERM, SIGHUP): the machine is ended and\n"
        "    the run's files (ISO, unpacked kernels, uploaded volumes) removed.\n"
        "The guest console is echoed with control characters escaped (\\xNN); the\n"
        "emulator's input is a pipe, never the terminal (Ctrl-C ends the run), which\n"
        "--console fills.\n"
        "\n"
        "  --platform P     where the guest runs (one launcher, back ends in tools/run_*.cc):\n"
        "                   sim    the simulated machine (default)\n"
        "                   qemu   the bare-metal hypervisor under qemu-system-x86_64, one\n"
        "                          CPU per vCPU; a test's policy and second domain become\n"
        "                          the module words deny= and peer=\n"
        "                   xen    Debian's Xen 4.17 under QEMU's TCG with the guest kernel\n"
        "                          as dom0 (dom0_mem= the test's frames, vCPUs on -smp and\n"
        "                          dom0_max_vcpus); the image is fetched into build/xen when\n"
        "                          missing (tools/fetch-xen.sh; SKIP when it cannot be). Only\n"
        "                          the domain's own words (xl.cfg's extra) reach dom0's command\n"
        "                          line; tests needing a second domain or a deny= policy, and\n"
        "                          more than one --config, are refused. The run ends at Xen's\n"
        "                          `Hardware Dom0 halted` or `Entering ACPI S5 state.` (powered\n"
        "                          off), `crashed`, `shutdown` or panic line; xl.cfg's ramdisk\n"
        "                          is dom0's next module\n"
        "                   xen-host  run in the dom0 of a Xen host (as root): the guest\n"
        "                          kernel becomes a PV domU of that host's Xen, created through\n"
        "                          libxenlight (memory = the test's frames, its vCPUs, its\n"
        "                          words as the command line), its console read from the pty\n"
        "                          xenconsoled serves; the run ends when the domain shuts down\n"
        "                          (it is destroyed then, or at the timeout; default 120 s).\n"
        "                          SKIP outside a dom0; refuses what xen refuses\n"
        "                   bochs  pvmmu's GRUB ISO (./pvmmu iso) under Bochs 2.7, CPU model\n"
        "                          corei7_icelake_u, one CPU per vCPU; the run ends at the\n"
        "                          hypervisor's last line (Bochs ignores isa-debug-exit);\n"
        "                          default --timeout 300; SKIP without Bochs\n"
        "                   libvirt[=URI]  the qemu platform's machine as a transient libvirt\n"
        "                          domain (generated XML, --print-xml: pvmmu-hv as <kernel>,\n"
        "                          the modules as <initrd>, pvpanic, no isa-debug-exit), started\n"
        "                          paused with its console opened, then resumed, through\n"
        "                          libvirt's C API; destroyed at the timeout. URI default:\n"
        "                          qemu:///embed?root=BUILD/libvirt-embed (libvirt's embedded\n"
        "                          QEMU driver: no daemon); qemu:///system names a daemon.\n"
        "                          A URI naming another host (qemu+ssh://HOST/system,\n"
        "                          qemu+tcp://HOST/system) gets pvmmu-hv and the guest kernels\n"
        "                          uploaded to its storage pool (--pool) for the run, through\n"
        "                          libvirt's storage API; the XML names the volumes' paths;\n"
        "                          a local URI reads the images where they are. The run\n"
        "                          ends at the hypervisor's last line, which names the\n"
        "                          isa-debug-exit code libvirt does not report; then the\n"
        "                          machine powers off (ACPI S5) or reports its panic\n"
        "                          (pvpanic), and the launcher prints how libvirt saw it\n"
        "                          end: `shut off (shutdown)` or `crashed (panicked)`; SKIP\n"
        "                          where libvirt cannot connect%s\n"
        "                   On qemu, xen, bochs and libvirt, tests needing a TLB or walker property\n"
        "                   x86 lacks skip, with the reason\n"
        "  --accel A        qemu and libvirt: kvm, tcg, or tcg-icount: TCG with -icount shift=0, where\n"
        "                   every guest instruction takes 1 ns of virtual time, so the\n"
        "                   guest's clock counts instructions (deterministic; the vCPUs\n"
        "                   take turns on one host thread). qemu's default: kvm when\n"
        "                   /dev/kvm is usable and passes the self-test (--kvm-self-test),\n"
        "                   else tcg, with a line saying why where /dev/kvm is there;\n"
        "                   kvm runs KVM even where the self-test fails (with a warning);\n"
        "                   kvm-qualified is KVM where it passes, else SKIP (label kvm).\n"
        "                   TCG's CPU is qemu64 with SMEP, SMAP and UMIP; KVM's -cpu host.\n"
        "                   libvirt's default: kvm when /dev/kvm is usable and the URI\n"
        "                   is qemu:///..., else tcg.\n"
        "                   xen: tcg (default) or tcg-icount.\n"
        "                   bochs: none\n"
        "  --cpu MODEL      qemu and xen: QEMU's -cpu instead of the default (qemu:\n"
        "                   qemu64,+smep,+smap,+umip under TCG, host under KVM; xen: max),\n"
        "                   e.g. qemu64,+smep,+umip for a guest that IRETs in ring 3\n"
        "                   (QEMU 7.2's TCG reads that frame as a supervisor access\n"
        "                   under SMAP: docs/boot.md \"CPU features\")\n"
        "  --cpus N         vCPUs of the guest's domain (default: the test's own)\n"
        "  --timeout S      kill a program (libvirt: destroy its domain) after S seconds\n"
        "                   (default 60; bochs 300)\n"
        "  --quiet          do not echo the guest console, only one line per program\n"
        "  --console, -c    the launcher's input goes to the guest's console (qemu, xen:\n"
        "                   the emulator's serial input; other platforms ignore it;\n"
        "                   pvmmu gives it to its console\n"
        "                   domain, the lowest-numbered one still running). At a\n"
        "                   terminal: raw mode (Ctrl-C and every key reach the guest,\n"
        "                   its bytes come through as they are, as `xl console`\n"
        "                   shows them), Ctrl-] ends the run (exit 130), the terminal's\n"
        "                   modes are restored on every way out but SIGKILL; piped\n"
        "                   input is forwarded as it comes. `./pvmmu run` passes it\n"
        "  --hv-args WORDS  qemu, libvirt and bochs: pvmmu-hv's own command line (QEMU\n"
        "                   -append, libvirt <cmdline>, bochs the ISO's GRUB line), e.g.\n"
        "                   selftest=trap: a panic on purpose\n"
        "  --print-xml NAME print the libvirt domain XML --platform libvirt would start\n"
        "                   for NAME, named pvmmu-NAME (for virsh define), and exit;\n"
        "                   --accel: as for that platform on this machine\n"
        "  --config FILE    boot the domains described by xl.cfg files (Xen's syntax, read\n"
        "                   with libxlutil: name, vcpus, memory in MiB, kernel = a guest\n"
        "                   kernel or a guest program's name (a Linux bzImage is unpacked\n"
        "                   to its ELF, as xl does: XZ only, into $TMPDIR/pvmmu-kernel-*,\n"
        "                   removed when the run ends, on SIGINT/SIGTERM/SIGHUP too, not\n"
        "                   on SIGKILL), ramdisk = its initial module (start_info's\n"
        "                   mod_start), extra = more module words, or cmdline, root as\n"
        "                   xl builds the command line, max_grant_frames (1..64) and\n"
        "                   max_maptrack_frames (0..1024) the domain's grant table limits;\n"
        "                   any other key is a warning naming\n"
        "                   it, and bootloader, firmware, pvh or a type other than pv an\n"
        "                   error)\n"
        "                   together on the bare-metal hypervisor, one CPU per vCPU (qemu,\n"
        "                   also for --platform sim; bochs; libvirt), or one as Xen's dom0 (xen);\n"
        "                   one line per domain by its own end (pvmmu's `domain N shut\n"
        "                   down (REASON)` line): exit 0 only when every domain powered\n"
        "                   off (and by the worst `Test result:` line, if any is printed),\n"
        "                   7 when one was refused, else 6 (without a `Test result:` line,\n"
        "                   as from Linux, the verdict says it was judged by the shutdown).\n"
        "                   Each file, kernel and ramdisk must be\n"
        "                   a regular file (an xl.cfg at most 1 MiB, without NUL bytes; a\n"
        "                   kernel at most the domain's memory)\n"
        "  --pool NAME      libvirt: upload the images to this storage pool, as volumes\n"
        "                   deleted after the run (a remote URI: always, default pool\n"
        "                   `default`; a local one: only with --pool)\n"
        "  --describe-host  libvirt: print the URI's host as one line of JSON (hostname,\n"
        "                   CPU model, arch, CPUs, sockets/cores/threads, MHz, memory,\n"
        "                   kernel where local, driver and its version: QEMU's, libvirt's\n"
        "                   version) and exit; for benchmark sweeps (perf/sweep.py)\n"
        "  --list           list the programs with their titles\n"
        "  --kvm-self-test  boot the accelerator qualification (tests/kvm/syscall_probe.S) under\n"
        "                   KVM and say whether KVM runs pvmmu here: exit 0 if it passes,\n"
        "                   3 if not (or no usable /dev/kvm); the verdict is kept in the\n"
        "                   build tree until the host reboots\n"
        "  --boot-args NAME print the guest kernel of NAME for the bare-metal hypervisor\n"
        "                   and, on a second line, the words its module string carries\n"
        "                   after the path when --platform qemu boots it (vcpus=N\n"
        "                   frames=F [deny=BITS] [peer=F]); ./pvmmu iso uses them\n"
        "  --fuzz           boot the hostile guest (tests/qemu/hostile_guest: random\n"
        "                   hypercalls, instructions and exception handlers from a seed,\n"
        "                   the hypervisor's invariant check every --check N operations)\n"
        "                   next to a well-behaved guest program (--with NAME, default\n"
        "                   tlb-shootdown; none: alone) on the bare-metal hypervisor; exit\n"
        "                   0 when both report SUCCESS, the machine ends powered off and\n"
        "                   the console shows no crash, panic or violation; else 5 (a\n"
        "                   failure reported) or 6 (crash, hang), with the seed and the\n"
        "                   console's last lines. --seed (default: from the clock, printed),\n"
        "                   --ops (default 100000, or no limit with --time), --time S\n"
        "                   (stop after S seconds), --trace N (print each operation from\n"
        "                   the N-th on, to see the one a crash follows, and check the\n"
        "                   guest's own page tables after each), --no-edges (no\n"
        "                   SYSCALL at the canonical boundary); --timeout defaults to the\n"
        "                   run's length and 180 s more\n"
        "  NAME may be `all` for every program.\n",
        kLibvirtBuilt ? "" : "\n                          (this pvmmu-run was built without libvirt-dev: always SKIP)");
}

const Program* find(const std::string& name)
{
    for (const Program& p : kPrograms)
        if (name == p.name) return &p;
    return nullptr;
}

// What a test asks of its platform (TestConfig), as its sim program's
// --info prints it.
struct TestInfo {
    std::string title;
    unsigned cpus = 1;
    unsigned long frames = 4096;
    unsigned long deny = 0;
    bool second_domain = false;
    unsigned long second_domain_frames = 0;   // its size, as the sim gives it
    bool tlb_caches_invalid = false, coherent_walker = true;
};

TestInfo info_of(const Program& p)
{
    std::string cmd = std::string("'") + p.path + "' --info 2>/dev/null";
    TestInfo t;
    FILE* f = popen(cmd.c_str(), "r");
    if (!f) return t;
    char buf[512];
    while (std::fgets(buf, sizeof(buf), f)) {
        std::string l = buf;
        if (!l.empty() && l.back() == '\n') l.pop_back();
        auto value = [&](const char* key) -> const char* {
            const size_t n = std::strlen(key);
            return l.compare(0, n, key) == 0 ? l.c_str() + n : nullptr;
        };
        if (const char* v = value("title: ")) t.title = v;
        if (const char* v = value("cpus: ")) t.cpus = unsigned(std::strtoul(v, nullptr, 0));
        if (const char* v = value("frames: ")) t.frames = std::strtoul(v, nullptr, 0);
        if (const char* v = value("deny: ")) t.deny = std::strtoul(v, nullptr, 0);
        if (const char* v = value("second_domain: ")) t.second_domain = std::strtoul(v, nullptr, 0) != 0;
        if (const char* v = value("second_domain_frames: ")) t.second_domain_frames = std::strtoul(v, nullptr, 0);
        if (const char* v = value("tlb_caches_invalid: ")) t.tlb_caches_invalid = std::strtoul(v, nullptr, 0) != 0;
        if (const char* v = value("coherent_walker: ")) t.coherent_walker = std::strtoul(v, nullptr, 0) != 0;
    }
    pclose(f);
    return t;
}

// A guest program's domain: the test's size, vCPUs (or --cpus), policy and
// second domain.
Domain domain_of(const Program& p, const TestInfo& t, const Options& o)
{
    Domain d;
    d.name = p.name;
    d.kernel = p.kernel;
    d.vcpus = o.cpus.empty() ? t.cpus : unsigned(std::strtoul(o.cpus.c_str(), nullptr, 10));
    d.frames = t.frames;
    d.deny = t.deny;
    d.peer_frames = t.second_domain ? t.second_domain_frames : 0;
    return d;
}

const char* word_of(int code);

// The back end of --platform; nullptr for sim.
const Backend* backend_of(const std::string& platform)
{
    for (const Backend* b : {&kQemu, &kXen, &kXenHost, &kBochs, &kLibvirt})
        if (platform == b->name) return b;
    return nullptr;
}

// Why x86 cannot run a test: docs/design.md §5 properties it does not have, so what
// these tests count (faults on cached misses, cleans) cannot happen there.
std::string x86_lacks(const TestInfo& t)
{
    if (t.tlb_caches_invalid) return "needs a TLB that caches not-present translations (docs/design.md §5); x86 TLBs never do";
    if (!t.coherent_walker) return "needs a page walker not coherent with the data cache (docs/design.md §5); the x86 walker is coherent";
    return "";
}

// A domain as the launcher's lines name it: its number and name, escaped.
std::string domain_label(const std::vector<Domain>& doms, size_t i)
{
    const Domain& d = doms[i];
    const std::string name = d.name.empty() ? d.kernel.substr(d.kernel.rfind('/') + 1) : d.name;
    return "domain " + std::to_string(i + 1) + " (" + printable(name) + ")";
}

// Boots the domains on a back end and judges the run: a result after which
// the last domain powered off, or (need_result false) the power-off alone.
// A domain the hypervisor refused to build makes the run kRefused, with the
// domain and the loader's reason. `ends`: each domain's end, as its console
// lines tell it (run_domains.h).
int launch(const Backend& b, const std::vector<Domain>& doms, const Options& o, bool need_result, std::string& why,
           std::vector<std::string>* console = nullptr, std::vector<DomainEnd>* ends = nullptr,
           bool (*keep)(const std::string&) = nullptr)
{
    if (b.lacks) why = b.lacks(doms);
    if (!why.empty()) return kSkipped;
    Launch l;
    const int prepared = b.prepare(doms, o, l, why);
    // A signal while the back end prepared (Ctrl-C reaches make-iso.sh or
    // fetch-xen.sh too, which then fail): the run was ended, whatever they said.
    if (const int sig = interrupted()) {
        why = "interrupted by SIG" + std::string(sigabbrev_np(sig)) + " before the machine started";
        return kInterruptedBase + sig;
    }
    if (prepared) return prepared;
    // Without a console asked for, only the lines domain_ends reads are kept.
    std::vector<std::string> own;
    int code = run_child(l, o, kPoweroffStatus, need_result, why, console ? console : &own,
                         console ? keep : domain_line);
    if (!console) console = &own;
    const std::vector<DomainEnd> e = domain_ends(*console, kernel_modules(doms));
    if (code < kInterruptedBase) {
        for (size_t i = 0; i < e.size(); ++i) {
            if (e[i].refused.empty()) continue;
            why = domain_label(doms, i) + ": refused: " + printable(e[i].refused);
            code = kRefused;
            break;
        }
    }
    if (ends) *ends = e;
    return code;
}

// The ELFs unpacked from bzImages for one run, removed when it ends.
struct Unpacked {
    std::vector<std::string> paths;
    ~Unpacked()
    {
        for (const std::string& p : paths) unlink(p.c_str());
    }
};

// A bzImage kernel (Linux's vmlinuz) is unpacked to its ELF, as xl does
// before loading it, into a temporary file that becomes the module (QEMU
// reads it when the machine starts); any other file goes as it is. False,
// with the reason printed, for a bzImage that cannot be unpacked. max: the
// domain's memory, the most its ELF may unpack to.
bool unpack_kernel(std::string& kernel, const std::vector<uint8_t>& file, Unpacked& made, size_t max)
{
    std::vector<uint8_t> elf;
    std::string why;
    switch (bzimage_unpack(file, elf, why, max)) {
    case BzImage::NotOne: return true;
    case BzImage::Refused:
        std::fprintf(stderr, "pvmmu-run: kernel '%s': %s\n", printable(kernel).c_str(), why.c_str());
        return false;
    case BzImage::Unpacked: break;
    }
    const char* dir = std::getenv("TMPDIR");
    std::string path = std::string(dir && *dir ? dir : "/tmp") + "/pvmmu-kernel-XXXXXX";
    const int fd = mkstemp(path.data());
    if (fd < 0) {
        std::fprintf(stderr, "pvmmu-run: kernel '%s': no temporary file for its ELF: %s\n", printable(kernel).c_str(),
                     std::strerror(errno));
        return false;
    }
    made.paths.push_back(path);
    const bool ok = write(fd, elf.data(), elf.size()) == ssize_t(elf.size());
    close(fd);
    if (!ok) {
        std::fprintf(stderr, "pvmmu-run: kernel '%s': could not write its ELF to %s\n", printable(kernel).c_str(),
                     printable(path).c_str());
        return false;
    }
    std::printf("pvmmu-run: kernel %s: a bzImage, its ELF (%zu bytes) unpacked to %s\n", printable(kernel).c_str(),
                elf.size(), printable(path).c_str());
    kernel = path;
    return true;
}

// --config: every file one domain, all booted together (on sim: on qemu).
int run_configs(const RunOptions& o)
{
    const Backend& b = o.platform == "sim" ? kQemu : *backend_of(o.platform);
    if (b.max_domains && o.configs.size() > b.max_domains) {
        std::fprintf(stderr, "pvmmu-run: --platform %s boots at most %zu domain(s) here: give at most %zu --config, "
                     "not %zu\n", b.name, b.max_domains, b.max_domains, o.configs.size());
        return 2;
    }
    std::vector<Domain> doms;
    Unpacked unpacked;
    for (const std::string& path : o.configs) {
        pvmmu::run::DomainConfig c;
        std::string err;
        if (!pvmmu::run::read_xl_config(path, c, err)) {
            std::fprintf(stderr, "pvmmu-run: %s\n", err.c_str());
            return 2;
        }
        for (const std::string& w : c.warnings)
            std::fprintf(stderr, "pvmmu-run: warning: '%s': %s\n", printable(path).c_str(), w.c_str());
        Domain d;
        d.name = c.name;
        d.kernel = find(c.kernel) ? find(c.kernel)->kernel : c.kernel;
        // A kernel larger than the domain's memory could never be loaded.
        const uint64_t cap = uint64_t(c.memory) << 20;
        std::vector<uint8_t> image;
        if (!read_input_file(d.kernel, cap, image, err)) {
            std::fprintf(stderr, "pvmmu-run: '%s': kernel: not a guest program, and the file %s\n",
                         printable(path).c_str(), err.c_str());
            return 2;
        }
        if (!unpack_kernel(d.kernel, image, unpacked, size_t(cap))) return 2;
        // The module's path as it goes to the machine (a bzImage's: the
        // temporary ELF's, under $TMPDIR): a ',' or ' ' would split it.
        if (d.kernel.find_first_of(", ") != std::string::npos) {
            std::fprintf(stderr, "pvmmu-run: '%s': kernel '%s': the module's path %s has a ',' or ' ' in it%s\n",
                         printable(path).c_str(), printable(c.kernel).c_str(), printable(d.kernel).c_str(),
                         d.kernel == c.kernel ? "" : " (set TMPDIR to a directory without them)");
            return 2;
        }
        // The ramdisk, checked as the kernel is: a regular file the domain's
        // memory can hold, not empty, its path one module word.
        if (!c.ramdisk.empty()) {
            std::vector<uint8_t> rd;
            if (!read_input_file(c.ramdisk, cap, rd, err) || rd.empty()) {
                std::fprintf(stderr, "pvmmu-run: '%s': ramdisk: %s\n", printable(path).c_str(),
                             rd.empty() && err.empty() ? ("'" + printable(c.ramdisk) + "' is empty").c_str() : err.c_str());
                return 2;
            }
            if (c.ramdisk.find_first_of(", ") != std::string::npos) {
                std::fprintf(stderr, "pvmmu-run: '%s': ramdisk '%s': a ',' or ' ' in its path would split the module\n",
                             printable(path).c_str(), printable(c.ramdisk).c_str());
                return 2;
            }
            d.ramdisk = c.ramdisk;
        }
        d.extra = c.extra;
        d.vcpus = unsigned(c.vcpus);
        d.frames = static_cast<unsigned long>(c.memory) * 256;
        d.max_grant_frames = c.max_grant_frames;
        d.max_maptrack_frames = c.max_maptrack_frames;
        std::printf("pvmmu-run: domain %zu: %s: kernel %s%s%s, %ld vCPUs, %ld MiB\n", doms.size() + 1,
                    printable(c.name).c_str(), printable(d.kernel).c_str(), d.ramdisk.empty() ? "" : ", ramdisk ",
                    printable(d.ramdisk).c_str(), c.vcpus, c.memory);
        doms.push_back(d);
    }
    std::string why;
    std::vector<DomainEnd> ends;
    std::vector<std::string> kept;   // the hypervisor's lines and any result line
    int code = launch(b, doms, o, false, why, &kept, &ends,
                      [](const std::string& l) { return domain_line(l) || l.rfind("Test result: ", 0) == 0; });
    bool had_result = false;
    for (const std::string& l : kept) had_result = had_result || l.rfind("Test result: ", 0) == 0;
    std::string ended;   // how the domains ended, for a run without a result line
    // Each domain by its own end (pvmmu's console only: Xen's dom0 has the
    // run's verdict alone). The run succeeds only if every domain did.
    if (from_pvmmu(ends) && code < kInterruptedBase) {
        int worst = 0;
        for (size_t i = 0; i < ends.size(); ++i) {
            std::string what;
            const int c = domain_verdict(ends[i], what);
            const std::string label = domain_label(doms, i);
            // Domains start once every one is built: a refusal stops them all.
            if (code == kRefused && c != kRefused)
                std::printf("pvmmu-run: %s: not started: the hypervisor stopped at the refused domain\n", label.c_str());
            else if (c == 0)
                std::printf("pvmmu-run: %s: %s\n", label.c_str(), what.c_str());
            else
                std::printf("pvmmu-run: %s: %s (exit %d): %s\n", label.c_str(), word_of(c), c, printable(what).c_str());
            if (c > worst) worst = c;
            ended += (ended.empty() ? "" : "; ") + label + " " + what;
        }
        if (worst > code) {
            code = worst;
            if (why.empty()) why = "not every domain powered off (above)";
        }
    }
    // A guest that prints no `Test result:` line (a Linux kernel) is judged
    // by how it ended: powered off is a success, anything else the crash
    // code; the verdict says so. A refusal, a skip or an interruption says
    // what it is already.
    if (!had_result && (code == 0 || code == kCrashed)) {
        const bool plain = why.empty() || why.rfind("no `Test result:`", 0) == 0 || why.rfind("not every domain", 0) == 0;
        std::string judged = "no `Test result:` line: judged by the shutdown: ";
        if (!ended.empty()) judged += ended + (plain ? "" : " (" + why + ")");
        else judged += code == 0 ? "powered off" : why;
        why = judged;
    }
    std::printf("pvmmu-run: %s (exit %d)%s%s\n", word_of(code), code, why.empty() ? "" : ": ", printable(why).c_str());
    return code;
}

// Whether l has one of `words` where a word starts (not "pvpanic", the
// device the boot line names).
template <size_t N>
bool says(const std::string& l, const char* const (&words)[N])
{
    for (const char* w : words)
        for (size_t at = l.find(w); at != std::string::npos; at = l.find(w, at + 1))
            if (at == 0 || !std::isalpha(static_cast<unsigned char>(l[at - 1]))) return true;
    return false;
}

// The lines of a console that say the run went wrong, whoever printed them:
// the hypervisor's panic or exception report, a crashed domain, an invariant
// violation, a failed check.
bool alarming(const std::string& l)
{
    static const char* const kWords[] = {"PANIC", "panic", "EXCEPTION", "VIOLATION", "FAILED", "FAILURE",
                                         "shut down (crash)", "crashed"};
    return says(l, kWords);
}

// Of those, the ones that say something crashed (a domain or the hypervisor):
// exit 6 whichever domain ended last, as for ./pvmmu run.
bool crash_line(const std::string& l)
{
    static const char* const kWords[] = {"PANIC", "panic", "EXCEPTION", "shut down (crash)", "crashed"};
    return says(l, kWords);
}

std::string fuzz_replay(const RunOptions& o, unsigned long long ops_done)
{
    std::string r = "./pvmmu fuzz --platform qemu --seed " + std::to_string(o.fuzz.seed);
    if (ops_done) r += " --ops " + std::to_string(ops_done);
    else if (o.fuzz.ops && o.fuzz.ops != ~0ull) r += " --ops " + std::to_string(o.fuzz.ops);
    if (o.fuzz.time_s && !ops_done) r += " --time " + std::to_string(o.fuzz.time_s);
    if (o.fuzz.check != 1000) r += " --check " + std::to_string(o.fuzz.check);
    if (!o.fuzz.edges) r += " --no-edges";
    if (o.fuzz.with != "tlb-shootdown") r += " --with " + o.fuzz.with;
    if (!o.accel.empty()) r += " --accel " + o.accel;
    return r;
}

// --fuzz: domain 1 the hostile guest (2 vCPUs, vCPU 1 started and downed by
// it now and then; an idle peer whose frames it names), domain 2 the
// well-behaved program with its own size, vCPUs, policy and peer.
int run_fuzz(RunOptions o)
{
    FuzzOptions& f = o.fuzz;
    if (!f.seed_set) f.seed = (static_cast<unsigned long long>(std::time(nullptr)) * 2654435761ull ^ getpid()) % 1000000007ull;
    if (!f.ops) f.ops = f.time_s ? ~0ull : 100000;
    if (!o.timeout_set) {
        const double by_ops = f.ops == ~0ull ? 0 : double(f.ops) / 1000.0;   // 1000 operations/s at worst
        const double run = f.time_s ? double(f.time_s) : by_ops;
        o.timeout_s = run + 180;
    }
    Domain h;
    h.name = "hostile";
    h.kernel = PVMMU_HOSTILE_GUEST;
    h.vcpus = 2;
    h.frames = 4096;
    h.peer_frames = 64;
    // Fixed-width words: the module string's length moves where the domains'
    // frames lie, and the run replays exactly only with the same layout.
    char words[160];
    std::snprintf(words, sizeof(words), "invariant-check seed=0x%016llx ops=0x%016llx time=0x%016llx "
                  "check=0x%016llx trace=0x%016llx edges=%d", f.seed, f.ops, f.time_s, f.check,
                  f.trace_set ? f.trace : ~0ull, f.edges ? 1 : 0);
    h.extra = words;
    std::vector<Domain> doms{h};
    if (f.with != "none") {
        const Program* p = find(f.with);
        if (!p) {
            std::fprintf(stderr, "pvmmu-run: --with: no guest program '%s' (see --list)\n", f.with.c_str());
            return 2;
        }
        Options plain = o;   // the program's own vCPUs, not --cpus
        plain.cpus.clear();
        doms.push_back(domain_of(*p, info_of(*p), plain));
    }
    std::printf("pvmmu-run: fuzz: seed %llu, %s operations%s%s, invariant check every %llu; next to %s; "
                "timeout %.0f s\n", f.seed, f.ops == ~0ull ? "no limit of" : std::to_string(f.ops).c_str(),
                f.time_s ? ", at most " : "", f.time_s ? (std::to_string(f.time_s) + " s").c_str() : "", f.check,
                f.with.c_str(), o.timeout_s);
    std::printf("pvmmu-run: fuzz: replay with: %s\n", fuzz_replay(o, 0).c_str());
    std::fflush(stdout);
    std::vector<std::string> console;
    std::string why;
    const auto t0 = std::chrono::steady_clock::now();
    int code = launch(kQemu, doms, o, false, why, &console);
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

    // The judgement: both domains' SUCCESS, the hostile guest's summary, no
    // alarming line, the hypervisor's last check of the core ok.
    const unsigned want = f.with == "none" ? 1 : 2;
    unsigned successes = 0;
    unsigned long long ops_done = 0;
    std::string done, first_alarm, last_core;
    for (const std::string& l : console) {
        if (l == "Test result: SUCCESS") ++successes;
        if (l.rfind("hostile: done:", 0) == 0) done = l;
        if (l.rfind("core invariants:", 0) == 0) last_core = l;
        unsigned long long n;
        if (std::sscanf(l.c_str(), "hostile: %llu ops", &n) == 1) ops_done = n;
        if (first_alarm.empty() && alarming(l)) first_alarm = l;
    }
    if (code == 0) {
        if (!first_alarm.empty()) why = "the console says: " + first_alarm, code = crash_line(first_alarm) ? kCrashed : 5;
        else if (successes != want) why = std::to_string(successes) + " `Test result: SUCCESS` lines, not " + std::to_string(want), code = 5;
        else if (done.empty()) why = "no `hostile: done:` line", code = 5;
        else if (last_core.rfind("core invariants: ok", 0) != 0) why = "the last core check is not ok", code = 5;
    } else if (!first_alarm.empty() && why.empty()) {
        why = "the console says: " + first_alarm;
    }
    if (code != 0) {
        std::printf("pvmmu-run: fuzz: FAILED (seed %llu): %s\n", f.seed, printable(why).c_str());
        const size_t from = console.size() > 40 ? console.size() - 40 : 0;
        std::printf("pvmmu-run: fuzz: the console's last %zu lines:\n", console.size() - from);
        for (size_t i = from; i < console.size(); ++i) std::printf("| %s\n", printable(console[i]).c_str());
        std::printf("pvmmu-run: fuzz: seed %llu; the last progress line said %llu operations; replay: %s "
                    "[--trace N to print each operation from the N-th]\n",
                    f.seed, ops_done, fuzz_replay(o, 0).c_str());
    } else {
        std::printf("pvmmu-run: fuzz: seed %llu: %s\n", f.seed, printable(done).c_str());
    }
    std::printf("pvmmu-run: fuzz: %s (exit %d) in %.1f s\n", word_of(code), code, secs);
    return code;
}

const char* word_of(int code)
{
    switch (code) {
    case 0: return "SUCCESS";
    case 3: return "SKIP";
    case 4: return "ERROR";
    case 5: return "FAILURE";
    case kRefused: return "REFUSED";
    default: return code >= kInterruptedBase ? "INTERRUPTED" : "CRASHED";
    }
}

// --kvm-self-test: the verdict the qemu platform's default accelerator
// follows (kvm_probe.h), as a line and an exit status.
int kvm_self_test_command()
{
    if (!kvm_usable()) {
        std::printf("pvmmu-run: /dev/kvm is not usable here: KVM cannot run pvmmu\n");
        return kSkipped;
    }
    const KvmVerdict v = kvm_self_test(PVMMU_KVM_PROBE_IMAGE, PVMMU_KVM_VERDICT);
    std::printf("pvmmu-run: /dev/kvm %s: %s\n", describe(v).c_str(),
                v.result == KvmProbe::Passed ? "KVM runs pvmmu here" : "the qemu platform uses TCG by default");
    return v.result == KvmProbe::Passed ? 0 : kSkipped;
}

} // namespace

int main(int argc, char** argv)
{
    catch_interrupts();
    RunOptions o;
    bool list = false, describe_host = false;
    std::string boot_args, print_xml;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&](const char* what) -> std::string {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "pvmmu-run: %s needs a value (see --help)\n", what);
                std::exit(2);
            }
            return argv[++i];
        };
        if (a == "-h" || a == "--help") {
            usage(stdout);
            return 0;
        } else if (a == "--list") {
            list = true;
        } else if (a == "--describe-host") {
            describe_host = true;
        } else if (a == "--pool") {
            o.pool = value("--pool");
        } else if (a == "--kvm-self-test") {
            return kvm_self_test_command();
        } else if (a == "--boot-args") {
            boot_args = value("--boot-args");
        } else if (a == "--print-xml") {
            print_xml = value("--print-xml");
        } else if (a == "--cpu") {
            o.cpu = value("--cpu");
        } else if (a == "--hv-args") {
            o.hv_args = value("--hv-args");
        } else if (a == "--quiet" || a == "-q") {
            o.quiet = true;
        } else if (a == "--console" || a == "-c") {
            o.console_input = true;
        } else if (a == "--platform") {
            o.platform = value("--platform");
            // libvirt=URI: the platform and its connection.
            if (const size_t eq = o.platform.find('='); eq != std::string::npos) {
                o.platform_arg = o.platform.substr(eq + 1);
                o.platform.resize(eq);
                if (o.platform != "libvirt" || o.platform_arg.empty()) {
                    std::fprintf(stderr, "pvmmu-run: only --platform libvirt takes '=ARG' (a URI)\n");
                    return 2;
                }
            }
        } else if (a == "--accel") {
            o.accel = value("--accel");
        } else if (a == "--config") {
            o.configs.push_back(value("--config"));
        } else if (a == "--fuzz") {
            o.fuzz.on = true;
        } else if (a == "--seed" || a == "--ops" || a == "--time" || a == "--check" || a == "--trace") {
            const std::string v = value(a.c_str());
            char* end = nullptr;
            errno = 0;
            const unsigned long long n = std::strtoull(v.c_str(), &end, 10);
            if (v.empty() || *end || errno || v[0] == '-' || (n == 0 && a != "--seed" && a != "--trace")) {
                std::fprintf(stderr, "pvmmu-run: %s takes a %s number\n", a.c_str(),
                             a == "--seed" || a == "--trace" ? "non-negative" : "positive");
                return 2;
            }
            if (a == "--seed") o.fuzz.seed = n, o.fuzz.seed_set = true;
            else if (a == "--ops") o.fuzz.ops = n;
            else if (a == "--time") o.fuzz.time_s = n;
            else if (a == "--check") o.fuzz.check = n;
            else o.fuzz.trace = n, o.fuzz.trace_set = true;
        } else if (a == "--no-edges") {
            o.fuzz.edges = false;
        } else if (a == "--with") {
            o.fuzz.with = value("--with");
        } else if (a == "--cpus") {
            o.cpus = value("--cpus");
            char* end = nullptr;
            const unsigned long n = std::strtoul(o.cpus.c_str(), &end, 10);
            if (*end || n == 0 || n > 64) {
                std::fprintf(stderr, "pvmmu-run: --cpus takes 1..64\n");
                return 2;
            }
        } else if (a == "--timeout") {
            const std::string t = value("--timeout");
            char* end = nullptr;
            o.timeout_s = std::strtod(t.c_str(), &end);
            o.timeout_set = true;
            if (*end || o.timeout_s <= 0) {
                std::fprintf(stderr, "pvmmu-run: --timeout takes a positive number of seconds\n");
                return 2;
            }
        } else if (!a.empty() && a[0] == '-') {
            std::fprintf(stderr, "pvmmu-run: unknown option '%s' (see --help)\n", a.c_str());
            return 2;
        } else if (a == "all") {
            for (const Program& p : kPrograms) o.names.push_back(p.name);
        } else {
            o.names.push_back(a);
        }
    }
    const Backend* backend = backend_of(o.platform);
    if (o.platform != "sim" && !backend) {
        std::fprintf(stderr, "pvmmu-run: no platform '%s'; there are sim, qemu, xen, xen-host, bochs and libvirt\n", o.platform.c_str());
        return 2;
    }
    // --accel: what the platform's emulator takes (sim and --fuzz: QEMU's).
    const Backend& accel_of = backend ? *backend : kQemu;
    if (!o.accel.empty() && ("|" + std::string(accel_of.accels) + "|").find("|" + o.accel + "|") == std::string::npos) {
        if (*accel_of.accels)
            std::fprintf(stderr, "pvmmu-run: --platform %s takes --accel %s%s\n", accel_of.name, accel_of.accels,
                         accel_of.accel_note);
        else
            std::fprintf(stderr, "pvmmu-run: --platform %s takes no --accel\n", accel_of.name);
        return 2;
    }
    // --cpu: only the back ends that start QEMU themselves (--fuzz is qemu's).
    if (!o.cpu.empty() && backend != &kQemu && backend != &kXen && !(!backend && o.fuzz.on)) {
        std::fprintf(stderr, "pvmmu-run: --cpu is for --platform qemu and xen\n");
        return 2;
    }
    if (backend && !o.timeout_set) o.timeout_s = backend->default_timeout_s;
    if (!print_xml.empty()) {
        const Program* p = find(print_xml);
        if (!p) {
            std::fprintf(stderr, "pvmmu-run: no guest program '%s' (see --list)\n", print_xml.c_str());
            return 2;
        }
        const std::string accel = pick_accel(o.accel).accel;
        std::fputs(libvirt_domain_xml({domain_of(*p, info_of(*p), o)}, accel.empty() ? "tcg" : accel, "pvmmu-" + print_xml, PVMMU_HV_IMAGE, "",
                                      o.hv_args).c_str(), stdout);
        return 0;
    }
    if (describe_host) {
        if (backend != &kLibvirt || !o.names.empty() || !o.configs.empty()) {
            std::fprintf(stderr, "pvmmu-run: --describe-host goes with --platform libvirt[=URI] alone\n");
            return 2;
        }
        std::string why;
        const int code = libvirt_describe_host(o, why);
        if (code) std::fprintf(stderr, "pvmmu-run: --describe-host: %s\n", why.c_str());
        return code;
    }
    if (!boot_args.empty()) {
        const Program* p = find(boot_args);
        if (!p) {
            std::fprintf(stderr, "pvmmu-run: no guest program '%s' (see --list)\n", boot_args.c_str());
            return 2;
        }
        std::printf("%s\n%s\n", p->kernel, module_words(domain_of(*p, info_of(*p), o)).c_str());
        return 0;
    }
    if (o.fuzz.on) {
        if (!o.names.empty() || !o.configs.empty() || list) {
            std::fprintf(stderr, "pvmmu-run: --fuzz takes no program names, --config or --list\n");
            return 2;
        }
        if (backend && backend != &kQemu) {
            std::fprintf(stderr, "pvmmu-run: --fuzz runs on --platform qemu only\n");
            return 2;
        }
        return run_fuzz(o);
    }
    const bool fuzz_option = o.fuzz.seed_set || o.fuzz.ops || o.fuzz.time_s || o.fuzz.check != 1000 ||
                             o.fuzz.trace_set || !o.fuzz.edges || o.fuzz.with != "tlb-shootdown";
    if (fuzz_option) {
        std::fprintf(stderr, "pvmmu-run: --seed, --ops, --time, --check, --trace, --no-edges and --with go with --fuzz\n");
        return 2;
    }
    if (!o.configs.empty()) {
        if (!o.names.empty()) {
            std::fprintf(stderr, "pvmmu-run: --config and program names do not mix\n");
            return 2;
        }
        return run_configs(o);
    }
    if (list) {
        for (const Program& p : kPrograms) std::printf("%-28s %s\n", p.name, info_of(p).title.c_str());
        return 0;
    }
    if (o.names.empty()) {
        usage(stderr);
        return 2;
    }
    for (const auto& n : o.names) {
        if (!find(n)) {
            std::fprintf(stderr, "pvmmu-run: no guest program '%s' (see --list)\n", n.c_str());
            return 2;
        }
    }

    int worst = 0;
    for (const auto& n : o.names) {
        const Program& p = *find(n);
        std::string why;
        const auto t0 = std::chrono::steady_clock::now();
        int code;
        if (backend) {
            const TestInfo t = info_of(p);
            why = x86_lacks(t);
            code = why.empty() ? launch(*backend, {domain_of(p, t, o)}, o, true, why) : kSkipped;
        } else {
            Launch l;
            l.args = {p.path};
            if (!o.cpus.empty()) l.args.insert(l.args.end(), {"--cpus", o.cpus});
            code = run_child(l, o, -1, true, why);
        }
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        std::printf("pvmmu-run: %s: %s (exit %d) in %.1f s%s%s\n", n.c_str(), word_of(code), code, s,
                    why.empty() ? "" : ": ", printable(why).c_str());
        std::fflush(stdout);
        if (code > worst) worst = code;
        if (code >= kInterruptedBase) break;   // the run was ended: no more programs
    }
    return worst;
}
