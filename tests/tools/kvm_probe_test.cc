// pvmmu-run's choice of accelerator (tools/kvm_probe.cc):
// the probe's console judged as tests/kvm/probe_test.sh judges it, and the
// choice that follows for each --accel. The consoles are what syscall-probe
// printed under TCG and under this project's /dev/kvm (the PVM back end,
// docs/boot.md "KVM that is not a CPU"), cut to the lines that matter.
#include "kvm_probe.h"

#include <gtest/gtest.h>

namespace pvmmu::run {
namespace {

const char* const kTcgConsole =
    "syscall-probe: STAR 0xe023e00800000000 FMASK 0x47700 EFER 0xd01 CR0 0x80010011 CR4 0x1000a0\n"
    "cpuid 0x40000000: TCGTCGTCGTCG max 0x40000001\n"
    "slot 0x0 (0x0): ring-0 call ok; SYSCALL from ring 3 ok\n"
    "slot 0x105 (0xffff828000000000): ring-0 call ok; SYSCALL from ring 3 ok\n"
    "probe: all ok\n";

const char* const kPvmConsole =
    "qemu-system-x86_64: warning: host doesn't support requested feature: CPUID.01H:ECX.pni [bit 0]\r\n"
    "syscall-probe: STAR 0xe023e00800000000 FMASK 0x47700 EFER 0xd01 CR0 0x80010011 CR4 0x1000a0\r\n"
    "cpuid 0x40000000: KVMKVMKVM max 0x40000001\r\n"
    "slot 0x0 (0x0): ring-0 call ok; SYSCALL from ring 3 exception: vector 0xe error code 0x15 rip 0x10035e "
    "cs 0xe033 cr2 0x10035e\r\n"
    "slot 0x105 (0xffff828000000000): ring-0 call ok; SYSCALL from ring 3 exception: vector 0xe error code 0x15 "
    "rip 0xffff82800010035e cs 0xe033 cr2 0xffff82800010035e\r\n"
    "probe: FAILED\r\n";

TEST(JudgeProbe, AllOkWithStatusOnePasses)
{
    EXPECT_EQ(judge_probe(1, kTcgConsole).result, KvmProbe::Passed);
}

TEST(JudgeProbe, AllOkWithAnotherStatusIsNoPass)
{
    // isa-debug-exit 0 gives 1; anything else means the probe did not end as it says.
    EXPECT_EQ(judge_probe(0, kTcgConsole).result, KvmProbe::Failed);
    EXPECT_EQ(judge_probe(3, kTcgConsole).result, KvmProbe::Failed);
}

TEST(JudgeProbe, SyscallFaultingAtLstarInUserModeIsThePvmSignature)
{
    const KvmVerdict v = judge_probe(3, kPvmConsole);
    EXPECT_EQ(v.result, KvmProbe::StaysAtCpl3);
    EXPECT_EQ(describe(v), "failed the self-test (SYSCALL from ring 3 stayed at CPL 3)");
}

TEST(JudgeProbe, AnotherFaultIsAPlainFailure)
{
    // A #PF at LSTAR in supervisor mode (error code 0x11) is not the CPL-3 signature.
    std::string console = kPvmConsole;
    for (size_t at; (at = console.find("error code 0x15")) != std::string::npos;) console.replace(at, 15, "error code 0x11");
    const KvmVerdict v = judge_probe(3, console);
    EXPECT_EQ(v.result, KvmProbe::Failed);
    EXPECT_EQ(v.detail, "QEMU exit status 3: probe: FAILED");
}

TEST(JudgeProbe, QemuThatDoesNotStartOrHangsFails)
{
    const KvmVerdict v = judge_probe(1, "qemu-system-x86_64: error: failed to set MSR 0x10a to 0x0\n");
    EXPECT_EQ(v.result, KvmProbe::Failed);
    EXPECT_EQ(v.detail, "QEMU exit status 1: qemu-system-x86_64: error: failed to set MSR 0x10a to 0x0");
    EXPECT_EQ(judge_probe(124, "syscall-probe: STAR 0xe023e00800000000\n").detail, "the probe did not end in time");
    EXPECT_EQ(judge_probe(1, "").detail, "QEMU exit status 1");
}

struct Choose : ::testing::Test {
    int probes = 0;
    KvmVerdict verdict;
    AccelChoice choose(const std::string& asked, bool usable)
    {
        return choose_accel(asked, usable, [this] {
            ++probes;
            return verdict;
        });
    }
};

TEST_F(Choose, TcgAndIcountAreTakenAsAskedWithoutAProbe)
{
    for (const char* a : {"tcg", "tcg-icount"}) {
        const AccelChoice c = choose(a, true);
        EXPECT_EQ(c.accel, a);
        EXPECT_EQ(c.note, "");
    }
    EXPECT_EQ(probes, 0);
}

TEST_F(Choose, NoUsableKvmMeansTcgSilentlyAndNoProbe)
{
    const AccelChoice c = choose("", false);
    EXPECT_EQ(c.accel, "tcg");
    EXPECT_EQ(c.note, "");
    EXPECT_EQ(probes, 0);
}

TEST_F(Choose, DefaultIsKvmWhereTheSelfTestPasses)
{
    verdict = {KvmProbe::Passed, "every SYSCALL entered ring 0"};
    const AccelChoice c = choose("", true);
    EXPECT_EQ(c.accel, "kvm");
    EXPECT_EQ(c.note, "");
    EXPECT_EQ(probes, 1);
}

TEST_F(Choose, DefaultIsTcgWithOneLineWhereKvmFailsTheSelfTest)
{
    verdict = judge_probe(3, kPvmConsole);
    const AccelChoice c = choose("", true);
    EXPECT_EQ(c.accel, "tcg");
    EXPECT_EQ(c.note, "/dev/kvm is present but failed the self-test (SYSCALL from ring 3 stayed at CPL 3): using TCG");
}

TEST_F(Choose, ExplicitKvmStillRunsKvmWithAWarning)
{
    verdict = judge_probe(3, kPvmConsole);
    const AccelChoice c = choose("kvm", true);
    EXPECT_EQ(c.accel, "kvm");
    EXPECT_EQ(c.note.rfind("warning: /dev/kvm failed the self-test (SYSCALL from ring 3 stayed at CPL 3)", 0), 0u);
    verdict = {KvmProbe::Passed, ""};
    EXPECT_EQ(choose("kvm", true).note, "");
    EXPECT_EQ(choose("kvm", false).accel, "kvm");   // QEMU says why it cannot
}

TEST_F(Choose, KvmQualifiedSkipsWithTheReasonUnlessTheSelfTestPasses)
{
    verdict = judge_probe(3, kPvmConsole);
    AccelChoice c = choose("kvm-qualified", true);
    EXPECT_EQ(c.accel, "");
    EXPECT_EQ(c.note, "/dev/kvm failed the self-test (SYSCALL from ring 3 stayed at CPL 3)");
    c = choose("kvm-qualified", false);
    EXPECT_EQ(c.accel, "");
    EXPECT_EQ(c.note, "/dev/kvm is not usable here");
    verdict = {KvmProbe::Passed, ""};
    EXPECT_EQ(choose("kvm-qualified", true).accel, "kvm");
}

TEST(KvmSelfTest, AMissingProbeImageFailsWithoutRunningQemu)
{
    const KvmVerdict v = kvm_self_test("/nonexistent/syscall-probe", "");
    EXPECT_EQ(v.result, KvmProbe::Failed);
    EXPECT_NE(v.detail.find("build the syscall-probe target"), std::string::npos);
}

} // namespace
} // namespace pvmmu::run
