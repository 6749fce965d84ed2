// Whether this host's /dev/kvm can run pvmmu: the launcher
// uses KVM by default only where /dev/kvm is usable AND the accelerator
// qualification passes: syscall-probe (tests/kvm/syscall_probe.S), a
// Multiboot kernel of its own that enters ring 3 and comes back by SYSCALL
// with pvmmu-hv's set-up, booted under KVM for a few seconds. A KVM that
// leaves the CPU at CPL 3 on that SYSCALL (the PVM back end of the project's
// machines, docs/boot.md "KVM that is not a CPU") crashes every guest at its
// first hypercall, so the run takes TCG and says why in one line.
#pragma once

#include <functional>
#include <string>

namespace pvmmu::run {

enum class KvmProbe {
    Passed,        // every SYSCALL from ring 3 entered ring 0
    StaysAtCpl3,   // SYSCALL from ring 3 reached LSTAR still at CPL 3
    Failed,        // anything else: QEMU did not start, a hang, another fault
};

struct KvmVerdict {
    KvmProbe result = KvmProbe::Failed;
    std::string detail;   // why, for the line the launcher prints
};

// The probe's outcome from QEMU's exit status (isa-debug-exit: 1 for "all
// ok", 3 for a failure; 124 for `timeout`) and its console, as
// tests/kvm/probe_test.sh judges it.
KvmVerdict judge_probe(int qemu_status, const std::string& console);

// Runs the probe under KVM (at most `timeout_s` seconds), or reads the
// verdict from `cache` when it was written during this boot of the host
// (/proc/sys/kernel/random/boot_id) for this probe image; writes it there.
// `cache` empty: no cache.
KvmVerdict kvm_self_test(const std::string& probe_image, const std::string& cache, double timeout_s = 30);

// The accelerator for a run, and the line to print about the choice (empty:
// none). `asked`: --accel as given ("" for the default); `kvm_usable`:
// /dev/kvm opens read-write; `self_test`: runs the probe, called only when
// its verdict decides something. The default is KVM where it is usable and
// passes, else TCG (with a line where /dev/kvm is there but failed);
// "kvm" runs KVM whatever the probe says, with a warning where it fails;
// "kvm-qualified" (the `kvm` test label) is KVM where it passes, else a skip:
// accel empty and `note` the reason.
struct AccelChoice {
    std::string accel;
    std::string note;
};
AccelChoice choose_accel(const std::string& asked, bool kvm_usable, const std::function<KvmVerdict()>& self_test);

// A verdict as one phrase: "passed", "failed (SYSCALL from ring 3 stayed at CPL 3)".
std::string describe(const KvmVerdict& v);

} // namespace pvmmu::run
