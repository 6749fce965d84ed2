// The facts the launcher's C++ and the bash share (tools/qemu_machine.h,
// hypervisor/arch/x86_64/boot/boot_defs.h) read alike on both sides: the bash
// of tools/defs.sh (tests/qemu/boot_test.sh, ./pvmmu boot and iso) asked
// here, the answers compared with pvmmu-run's (tools/run_backend.h,
// tools/run_qemu.cc). A definition one side reads and the other does not, or
// a sizing rule written differently, fails here.
#include "run_backend.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace pvmmu::run {
namespace {

// The output of a bash script run after `source tools/defs.sh`, without its
// last newline; "" with a failure recorded if bash failed.
std::string bash(const std::string& script)
{
    std::string quoted;
    for (char c : "source " PVMMU_SOURCE_DIR "/tools/defs.sh && " + script) {
        if (c == '\'') quoted += "'\\''";
        else quoted += c;
    }
    FILE* p = popen(("bash -c '" + quoted + "'").c_str(), "r");
    if (!p) {
        ADD_FAILURE() << "popen failed";
        return "";
    }
    std::string out;
    char buf[256];
    while (size_t n = std::fread(buf, 1, sizeof(buf), p)) out.append(buf, n);
    const int rc = pclose(p);
    EXPECT_EQ(rc, 0) << script;
    if (!out.empty() && out.back() == '\n') out.pop_back();
    return out;
}

TEST(MachineDefs, BashReadsTheExitStatusesTheLauncherJudges)
{
    EXPECT_EQ(bash("pvmmu_status HV_EXIT_SUCCESS"), std::to_string(exit_status(HV_EXIT_SUCCESS)));
    EXPECT_EQ(bash("pvmmu_status HV_EXIT_SUCCESS"), "33");   // QEMU's status, as docs/boot.md "Exit codes" names it
    EXPECT_EQ(bash("pvmmu_status HV_EXIT_FAILURE"), std::to_string(kFailedStatus));
    EXPECT_EQ(bash("pvmmu_status HV_EXIT_PANIC"), std::to_string(kPanicStatus));
    EXPECT_EQ(bash("pvmmu_status HV_EXIT_SHUTDOWN 0"), std::to_string(kPoweroffStatus));
    EXPECT_EQ(bash("pvmmu_status HV_EXIT_SHUTDOWN 1"), std::to_string(kRebootStatus));
    EXPECT_EQ(bash("pvmmu_status HV_EXIT_SHUTDOWN 3"), std::to_string(kCrashStatus));
}

TEST(MachineDefs, BashGivesQemuTheLaunchersCpuModelsMachineAndExitDevice)
{
    EXPECT_EQ(bash("pvmmu_define PVMMU_QEMU_TCG_CPU"), kTcgCpu);
    EXPECT_EQ(bash("pvmmu_define PVMMU_QEMU_KVM_CPU"), kKvmCpu);
    EXPECT_EQ(bash("pvmmu_define PVMMU_QEMU_TCG_CPU_NO_SMAP"), PVMMU_QEMU_TCG_CPU_NO_SMAP);
    EXPECT_EQ(bash("pvmmu_define PVMMU_QEMU_MACHINE"), kQemuMachine);
    EXPECT_EQ(bash("pvmmu_debug_exit"), kIsaDebugExit);
    // A name neither header defines is an error, not an empty value.
    EXPECT_NE(std::system("bash -c 'source " PVMMU_SOURCE_DIR "/tools/defs.sh && "
                          "pvmmu_define PVMMU_NO_SUCH_NAME' 2>/dev/null"),
              0);
}

// pvmmu_machine in bash, given each domain's module words as pvmmu-run writes
// them (module_words), against pvmmu-run's own sizing.
void expect_same_machine(const std::vector<Domain>& doms)
{
    std::string script = "pvmmu_machine";
    for (const Domain& d : doms) script += " '" + module_words(d) + "'";
    const Machine m = pvmmu_machine(doms);
    EXPECT_EQ(bash(script), std::to_string(m.cpus) + " " + std::to_string(m.mib)) << script;
}

TEST(MachineDefs, BashSizesTheMachineAsTheLauncher)
{
    Domain one;
    one.kernel = "k";
    expect_same_machine({one});

    Domain big = one;
    big.vcpus = 3;
    big.frames = 65536;
    big.extra = "role=spin frames=7";   // the first frames= counts, as the hypervisor reads it
    expect_same_machine({one, big});

    // A peer: a CPU and its frames, though it never runs.
    Domain with_peer = one;
    with_peer.vcpus = 2;
    with_peer.peer_frames = 8192;
    expect_same_machine({with_peer});
    expect_same_machine({with_peer, big, one});

    Domain denied = one;
    denied.deny = 0x3;
    denied.frames = 1000;   // not a whole MiB: the sum is rounded down once
    expect_same_machine({denied, denied, denied});
}

// The grant table limits go on the module string as the hypervisor reads
// them (boot/main.cc), only when the domain's config set them.
TEST(MachineDefs, GrantLimitsAreModuleWordsWhenSet)
{
    Domain d;
    d.kernel = "k";
    EXPECT_EQ(module_words(d).find("max_"), std::string::npos) << module_words(d);
    d.max_grant_frames = 4;
    d.max_maptrack_frames = 0;
    d.extra = "role=a";
    EXPECT_EQ(module_words(d), "vcpus=1 frames=4096 max_grant_frames=4 max_maptrack_frames=0 role=a");
}

TEST(MachineDefs, AModuleWithoutFramesGetsTheHypervisorsDefault)
{
    const unsigned long mib = PVMMU_HV_MIB + (HV_DEFAULT_FRAMES * 4096ul >> 20) + HV_GRANT_MIB;
    EXPECT_EQ(bash("pvmmu_machine 'kernel role=handled'"), "1 " + std::to_string(mib));
    EXPECT_EQ(bash("pvmmu_machine"), "0 " + std::to_string(PVMMU_HV_MIB));
}

} // namespace
} // namespace pvmmu::run
