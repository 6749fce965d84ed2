// The launcher's back ends (pvmmu-run --platform qemu|xen|xen-host|bochs; docs/boot.md
// "The launcher's back ends"). A back end says how its platform boots a list
// of domains, which domain features it cannot give (the run is a SKIP), and
// which console lines end a run whose emulator does not exit by itself. The
// domain list, the child process and the judgement of its console are shared
// (run_child.cc), so every platform maps a run to the same exit codes.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "../hypervisor/arch/x86_64/boot/boot_defs.h"
#include "kvm_probe.h"
#include "qemu_machine.h"

namespace pvmmu::run {

constexpr int kSkipped = 3;
constexpr int kCrashed = 6;
// A domain the hypervisor refused to build (its image, its size, its words):
// the console's `pvmmu: FAILED: domain N ...` line, named with its reason.
constexpr int kRefused = 7;

// SIGINT, SIGTERM and SIGHUP end a run as a verdict, not by killing the
// launcher: the child's process group is killed and the run's files (a
// scratch folder, unpacked kernels, uploaded volumes) are removed on the way
// out; the launcher then exits 128 + the signal's number, as a shell would.
constexpr int kInterruptedBase = 128;
void catch_interrupts();
int interrupted();   // the signal caught, or 0

// A console line longer than this is cut into pieces of this size: a child
// that never writes a newline cannot grow the launcher's memory.
constexpr size_t kMaxConsoleLine = 4096;

// QEMU's exit status for the hypervisor's isa-debug-exit code (boot_defs.h;
// docs/boot.md "Exit codes"). Every back end's run ends with a status on this
// scale, whether its emulator exits with it or a console line stands for it.
constexpr int exit_status(unsigned code) { return int(code << 1 | 1); }
constexpr int kFailedStatus = exit_status(HV_EXIT_FAILURE);         // a boot check failed
constexpr int kPanicStatus = exit_status(HV_EXIT_PANIC);
constexpr int kPoweroffStatus = exit_status(HV_EXIT_SHUTDOWN + 0);   // the last domain: SHUTDOWN_poweroff
constexpr int kRebootStatus = exit_status(HV_EXIT_SHUTDOWN + 1);     // SHUTDOWN_reboot
constexpr int kCrashStatus = exit_status(HV_EXIT_SHUTDOWN + 3);      // SHUTDOWN_crash

struct Options {
    std::string platform = "sim";
    std::string platform_arg;   // what follows '=' in --platform NAME=ARG (libvirt: the URI)
    std::string pool;   // libvirt: the storage pool the images are uploaded to ("": none here, "default" remote)
    std::string accel;   // kvm, tcg or tcg-icount, as the back end takes; empty: its default
    std::string cpus;    // empty: the program's default
    double timeout_s = 60;
    bool timeout_set = false;
    bool quiet = false;
    // --console: the launcher's input goes to the emulator's serial input
    // (run_input.h); a terminal in raw mode, Ctrl-] ends the run.
    bool console_input = false;
    std::string cpu;       // QEMU's -cpu for qemu and xen ("": kTcgCpu or kKvmCpu; xen: max)
    std::string hv_args;   // pvmmu-hv's command line (qemu: -append; libvirt: <cmdline>; bochs: GRUB's), e.g. selftest=trap
    // The most a child may write to a file (RLIMIT_FSIZE): a console in a file
    // (Bochs's COM1) and the emulator's own log stop growing there.
    unsigned long long file_cap = 256ull << 20;
};

// A domain to boot: a guest kernel, its size and vCPUs, and what only pvmmu
// gives (docs/abi.md §10): a policy applied before it starts and an idle peer.
struct Domain {
    std::string name;                // for the reader ("": the kernel's file name)
    std::string kernel, extra;       // extra: more words for its module string
    std::string ramdisk;             // its initial module (xl.cfg's `ramdisk`), "": none
    unsigned long vcpus = 1, frames = 4096;
    unsigned long deny = 0;          // deny=: PVMMU_DENY_* bits
    unsigned long peer_frames = 0;   // peer=: an idle second domain of that size (0: none)
    // max_grant_frames= and max_maptrack_frames= (xl.cfg's keys): its grant
    // table's limits; -1: the hypervisor's defaults.
    long max_grant_frames = -1, max_maptrack_frames = -1;
};

// The words of a domain's module string after the kernel's path on pvmmu
// (vcpus=N frames=F [deny=BITS] [peer=F] [max_grant_frames=N]
// [max_maptrack_frames=N] [extra]). Also what `./pvmmu iso`
// puts on its module2 line (--boot-args).
std::string module_words(const Domain& d);

// The machine pvmmu needs for these domains: one CPU per vCPU (a peer's
// included: it never runs, but its CPU exists, as on the sim), the
// hypervisor's 128 MiB, the domains' memory and their grant tables
// (HV_GRANT_MIB each).
struct Machine {
    unsigned long cpus = 0, mib = PVMMU_HV_MIB;
};
Machine pvmmu_machine(const std::vector<Domain>& doms);

// A console line that ends a run (its start), with the exit status QEMU would
// have given for it; `more` lines after it are read first (a panic's message).
struct Ending {
    const char* prefix;
    int status;      // -1: the line names the isa-debug-exit code ("code 0x20")
    unsigned more;
};

// pvmmu-hv's own last lines (the end of the last domain, a panic, a failed
// boot check), for a platform that cannot see its isa-debug-exit code.
extern const std::vector<Ending> kPvmmuEndings;

// A machine the launcher does not run as its child process (libvirt's
// domain). Started with a descriptor, it writes its console there and
// closes it when the machine is gone.
struct Session {
    virtual ~Session() = default;
    // Starts the machine; owns `console_fd` from then on. 0, or kSkipped or
    // kCrashed with `why`.
    virtual int start(int console_fd, std::string& why) = 0;
    // The console's ending line was seen: waits a while for the machine to
    // end by itself, so its host can say how (libvirt: shut off or crashed).
    virtual void settle() {}
    // Ends the machine if it still runs, and waits until it no longer writes.
    virtual void stop() = 0;
    // How it ended, for a run that ended without an ending line.
    virtual std::string gone() = 0;
};

// One run as a back end prepared it: a child process (args), or a session.
struct Launch {
    std::vector<std::string> args;
    std::unique_ptr<Session> session;
    std::string console_file;        // the console when it is not the child's stdout
    // The child reads the guest console's input on its stdin (QEMU's
    // -serial stdio: qemu, xen): --console applies to it, to no other.
    bool takes_input = false;
    std::vector<Ending> endings;     // none: the run ends when the child exits
    std::string scratch;             // a folder of the run's files, removed with it
    Launch() = default;
    Launch(const Launch&) = delete;
    Launch& operator=(const Launch&) = delete;
    ~Launch();
};

struct Backend {
    const char* name;
    double default_timeout_s;
    size_t max_domains;              // 0: any number
    const char* accels;              // the --accel values it takes, '|'-separated ("": none)
    const char* accel_note;          // why not others, for the usage error ("" or "; ...")
    // Why the platform cannot give these domains what they need (the run is a
    // SKIP), or ""; nullptr: it lacks nothing.
    std::string (*lacks)(const std::vector<Domain>&);
    // Fills `l` and returns 0, or returns kSkipped (a missing tool or image)
    // or kCrashed with `why`.
    int (*prepare)(const std::vector<Domain>&, const Options&, Launch& l, std::string& why);
};

extern const Backend kQemu;    // pvmmu under qemu-system-x86_64 (run_qemu.cc)
extern const Backend kXen;     // Xen 4.17 under QEMU's TCG, the kernel as dom0 (run_xen.cc)
// The guest kernel as a domU of the Xen host pvmmu-run runs in (its dom0),
// through libxenlight and libxenctrl (run_xen_host.cc).
extern const Backend kXenHost;
extern const Backend kBochs;   // pvmmu's GRUB ISO under Bochs (run_bochs.cc)
// pvmmu under QEMU as a libvirt domain (run_libvirt.cc; run_libvirt_missing.cc
// where libvirt-dev was missing at build time: every run a SKIP).
extern const Backend kLibvirt;

// Runs a launch with its console echoed (unless quiet) and judged: the last
// `Test result:` line gives the code (0/3/4/5), `expect_status` the exit
// status that must go with it (-1: the result's own code, as a sim program
// exits). need_result false: a run judged by its status and the worst result
// line, if any. Crash, timeout, no result: 6, with `why`.
// `console` gets the lines echoed, or with `keep` only those it keeps, at
// most kMaxKeptLines of them (a guest that prints without end cannot grow
// the launcher's memory through it).
int run_child(const Launch& l, const Options& o, int expect_status, bool need_result, std::string& why,
              std::vector<std::string>* console = nullptr, bool (*keep)(const std::string&) = nullptr);
constexpr size_t kMaxKeptLines = 65536;

// Helpers of the back ends.
// `s` as it may reach a terminal: control characters (C0 but a tab, DEL, and
// the C1 controls U+0080..U+009F in UTF-8) written as \n or \xNN, so a
// name or a path from a config or an image, or a guest's console line,
// cannot move the cursor back, set a title or run an escape sequence.
std::string printable(const std::string& s);
std::string quoted(const std::string& s);                 // for /bin/sh
int run_tool(const std::string& command, std::string& out);  // its exit status; stdout in `out`
bool on_path(const std::string& program);
std::string make_scratch();                              // a new folder under $TMPDIR, "" on failure
// qemu-system-x86_64 booting a Multiboot kernel with modules, COM1 on its
// stdout; accel kvm, tcg or tcg-icount (TCG where every instruction takes 1 ns).
// cpu: QEMU's -cpu ("": kTcgCpu, or kKvmCpu under KVM). More options may follow.
std::vector<std::string> qemu_command(const std::string& accel, unsigned long cpus, unsigned long mib,
                                      const std::string& kernel, const std::string& modules,
                                      const std::string& cpu = "");
// A module string for QEMU's -initrd, whose ',' separates modules: one inside
// a string is written ",,".
std::string initrd_escaped(const std::string& s);
// pvmmu's modules for -initrd: each domain's kernel and module words, then
// its ramdisk as a module of its own whose words say `ramdisk` (the
// hypervisor gives it to the domain before it: boot/main.cc).
std::string pvmmu_modules(const std::vector<Domain>& doms);
// The word that makes a module the ramdisk of the domain before it.
constexpr const char* kRamdiskWord = "ramdisk";
// The Multiboot module index of each domain's kernel in pvmmu_modules'
// order (a ramdisk takes an index too), for domain_ends.
std::vector<size_t> kernel_modules(const std::vector<Domain>& doms);
// The device whose port pvmmu-hv writes its exit code to (docs/boot.md "Exit codes").
#define PVMMU_STRING_OF(x) #x
#define PVMMU_STRING(x) PVMMU_STRING_OF(x)
constexpr const char* kIsaDebugExit = "isa-debug-exit,iobase=" PVMMU_STRING(DEBUG_EXIT_PORT) ",iosize=0x04";
// QEMU's CPU models and machine (qemu_machine.h).
constexpr const char* kTcgCpu = PVMMU_QEMU_TCG_CPU;
constexpr const char* kKvmCpu = PVMMU_QEMU_KVM_CPU;
constexpr const char* kQemuMachine = PVMMU_QEMU_MACHINE;
// QEMU's options for TCG where every instruction takes 1 ns (--accel tcg-icount).
constexpr const char* kIcountOption = "shift=0,sleep=off";
bool kvm_usable();
// The accelerator for --accel `asked` ("" for the default): KVM only where
// /dev/kvm is usable and passes the self-test (kvm_probe.h); the reason for
// TCG printed once per launcher run.
AccelChoice pick_accel(const std::string& asked);

} // namespace pvmmu::run
