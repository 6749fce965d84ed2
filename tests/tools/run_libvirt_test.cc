// The libvirt back end (tools/run_libvirt*.cc): the domain XML it generates,
// checked element by element and against libvirt's schema (virt-xml-validate),
// and against libvirt's test driver (test:///default), which starts domains
// without running anything: the XML defined, looked up, started, destroyed
// and read back as libvirt understood it; the session on a driver without
// consoles, an unreachable URI, and no domain left behind; how an end is
// said (virsh's words).
#include "run_libvirt.h"

#include <cstdio>
#include <filesystem>
#include <set>

#include <gtest/gtest.h>

#if PVMMU_HAVE_LIBVIRT
#include <libvirt/libvirt.h>
#endif

namespace pvmmu::run {
namespace {

std::vector<Domain> two_domains()
{
    Domain a;
    a.name = "flag-range-basic";
    a.kernel = "/guests/a,b/kernel";   // a ',' in a path: ",," for -initrd
    a.vcpus = 2;
    Domain b;
    b.kernel = "/guests/b&c";          // '&' in XML: "&amp;"
    b.frames = 8192;
    b.peer_frames = 64;
    return {a, b};
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(LibvirtXml, DescribesTheQemuBackEndsMachine)
{
    const auto doms = two_domains();
    const std::string x = libvirt_domain_xml(doms, "tcg", "pvmmu-x-1-1", "/build/pvmmu-hv");
    const Machine m = pvmmu_machine(doms);
    EXPECT_TRUE(has(x, "<domain type='qemu'")) << x;
    EXPECT_TRUE(has(x, "<name>pvmmu-x-1-1</name>")) << x;
    EXPECT_TRUE(has(x, "<memory unit='MiB'>" + std::to_string(m.mib) + "</memory>")) << x;
    EXPECT_TRUE(has(x, "<vcpu>" + std::to_string(m.cpus) + "</vcpu>")) << x;
    EXPECT_TRUE(has(x, "<kernel>/build/pvmmu-hv</kernel>")) << x;
    EXPECT_TRUE(has(x, "<initrd>/guests/a,,b/kernel vcpus=2 frames=4096,/guests/b&amp;c vcpus=1 frames=8192 "
                       "peer=64</initrd>")) << x;
    EXPECT_TRUE(has(x, "<acpi/>")) << x;
    EXPECT_TRUE(has(x, "<seclabel type='none' model='dac'/>")) << x;
    EXPECT_TRUE(has(x, "<console type='pty'>")) << x;
    // The machine ends as libvirt understands: soft-off,
    // or a panic through pvpanic, kept crashed so virsh shows it.
    EXPECT_FALSE(has(x, "isa-debug-exit")) << "libvirt reads its every code as a crash: " << x;
    EXPECT_TRUE(has(x, "<panic model='isa'>\n      <address type='isa' iobase='0x505'/>\n    </panic>")) << x;
    EXPECT_TRUE(has(x, "<on_poweroff>destroy</on_poweroff>")) << x;
    EXPECT_TRUE(has(x, "<on_crash>preserve</on_crash>")) << x;
    EXPECT_FALSE(has(x, "<cmdline>")) << "pvmmu-hv takes no command line: " << x;
    EXPECT_FALSE(has(x, "qemu:commandline")) << "nothing QEMU-specific without -icount: " << x;
}

TEST(LibvirtXml, HvArgsAreItsCommandLine)
{
    const std::string x = libvirt_domain_xml(two_domains(), "tcg", "n", "/hv", "", "selftest=trap a<b");
    EXPECT_TRUE(has(x, "</initrd>\n    <cmdline>selftest=trap a&lt;b</cmdline>\n  </os>")) << x;
}

TEST(LibvirtXml, AccelChoosesTheDomainType)
{
    const auto doms = two_domains();
    EXPECT_TRUE(has(libvirt_domain_xml(doms, "kvm", "n", "/hv"), "<domain type='kvm'"));
    const std::string icount = libvirt_domain_xml(doms, "tcg-icount", "n", "/hv");
    EXPECT_TRUE(has(icount, "<domain type='qemu'"));
    EXPECT_TRUE(has(icount, "<qemu:arg value='-icount'/>\n    <qemu:arg value='shift=0,sleep=off'/>")) << icount;
}

TEST(LibvirtXml, ASerialLogCopiesCom1)
{
    const std::string x = libvirt_domain_xml(two_domains(), "tcg", "n", "/hv", "/root/log/n-serial0.log");
    EXPECT_TRUE(has(x, "<serial type='pty'>\n      <log file='/root/log/n-serial0.log' append='off'/>\n")) << x;
}

TEST(LibvirtXml, NamesAreUniqueAndPlain)
{
    auto doms = two_domains();
    doms.front().name = "a b/c";
    const std::string n1 = libvirt_domain_name(doms), n2 = libvirt_domain_name(doms);
    EXPECT_NE(n1, n2);
    EXPECT_EQ(n1.rfind("pvmmu-a_b_c-", 0), 0u) << n1;
}

TEST(LibvirtXml, PassesLibvirtsSchema)
{
    if (std::system("command -v virt-xml-validate >/dev/null 2>&1") != 0)
        GTEST_SKIP() << "virt-xml-validate is not installed (libvirt-clients: ./pvmmu deps)";
    const auto path = std::filesystem::temp_directory_path() / ("pvmmu-libvirt-" + std::to_string(getpid()) + ".xml");
    for (const char* accel : {"kvm", "tcg", "tcg-icount"}) {
        FILE* f = std::fopen(path.c_str(), "w");
        ASSERT_NE(f, nullptr);
        std::fputs(libvirt_domain_xml(two_domains(), accel, "pvmmu-x-1-1", "/build/pvmmu-hv", "/log/s.log",
                                      "selftest=trap").c_str(), f);
        std::fclose(f);
        const std::string cmd = "virt-xml-validate '" + path.string() + "' domain >/dev/null";
        EXPECT_EQ(std::system(cmd.c_str()), 0) << accel << ": " << cmd;
    }
    std::filesystem::remove(path);
}

#if PVMMU_HAVE_LIBVIRT

struct LibvirtSession : ::testing::Test {
    Options o;
    std::string why;
    virConnectPtr conn = nullptr;   // held, so test:///default keeps its state between connections

    LibvirtSession()
    {
        o.quiet = true;
        o.timeout_s = 20;
        o.platform = "libvirt";
        o.platform_arg = "test:///default";
        conn = virConnectOpen("test:///default");
    }
    ~LibvirtSession() override
    {
        if (conn) virConnectClose(conn);
    }
    int run(const std::vector<Domain>& doms)
    {
        Launch l;
        if (const int rc = libvirt_prepare(doms, o, l, why)) return rc;
        return run_child(l, o, kPoweroffStatus, true, why);
    }
    std::set<std::string> pvmmu_domains()
    {
        std::set<std::string> names;
        virDomainPtr* list = nullptr;
        const int n = virConnectListAllDomains(conn, &list, 0);
        for (int i = 0; i < n; ++i) {
            const std::string name = virDomainGetName(list[i]);
            if (name.rfind("pvmmu-", 0) == 0) names.insert(name);
            virDomainFree(list[i]);
        }
        free(list);
        return names;
    }
};

TEST_F(LibvirtSession, AnUnreachableUriIsASkip)
{
    o.platform_arg = "test:///nonexistent/pvmmu-no-such-file.xml";
    EXPECT_EQ(run(two_domains()), kSkipped) << why;
    EXPECT_TRUE(has(why, "cannot connect to test:///nonexistent")) << why;
}

TEST_F(LibvirtSession, ADriverWithoutConsolesCrashesTheRunAndLeavesNoDomain)
{
    ASSERT_NE(conn, nullptr);
    const auto before = pvmmu_domains();
    // The test driver starts the domain (it has neither START_PAUSED nor
    // AUTODESTROY: the launcher starts it without them) but has no consoles.
    EXPECT_EQ(run(two_domains()), kCrashed) << why;
    EXPECT_TRUE(has(why, "cannot open the domain's console")) << why;
    EXPECT_EQ(pvmmu_domains(), before) << "the launcher destroys the domain it started";
}

// The domain as libvirt's parser reads it (test:///default keeps what it
// understood; virDomainGetXMLDesc gives it back), through the calls the
// launcher and virsh make: define, look up by name, start, state, destroy.
TEST_F(LibvirtSession, TheXmlIsDefinedStartedAndDestroyedAsWritten)
{
    ASSERT_NE(conn, nullptr);
    const std::string name = libvirt_domain_name(two_domains());
    const std::string xml = libvirt_domain_xml(two_domains(), "tcg", name, "/build/pvmmu-hv", "", "selftest=trap");
    virDomainPtr d = virDomainDefineXML(conn, xml.c_str());
    ASSERT_NE(d, nullptr) << xml;
    virDomainFree(d);
    d = virDomainLookupByName(conn, name.c_str());
    ASSERT_NE(d, nullptr);
    char* back = virDomainGetXMLDesc(d, 0);
    ASSERT_NE(back, nullptr);
    const std::string x = back;
    free(back);
    EXPECT_TRUE(has(x, "<kernel>/build/pvmmu-hv</kernel>")) << x;
    EXPECT_TRUE(has(x, "<initrd>/guests/a,,b/kernel vcpus=2 frames=4096,/guests/b&amp;c")) << x;
    EXPECT_TRUE(has(x, "<cmdline>selftest=trap</cmdline>")) << x;
    EXPECT_TRUE(has(x, "<on_poweroff>destroy</on_poweroff>")) << x;
    EXPECT_TRUE(has(x, "<on_crash>preserve</on_crash>")) << x;
    EXPECT_TRUE(has(x, "<panic model='isa'>")) << x;
    EXPECT_TRUE(has(x, "iobase='0x505'")) << x;
    EXPECT_TRUE(has(x, "<vcpu placement='static'>" + std::to_string(pvmmu_machine(two_domains()).cpus))) << x;
    int state = -1, reason = -1;
    ASSERT_EQ(virDomainGetState(d, &state, &reason, 0), 0);
    EXPECT_EQ(libvirt_state_words(state, reason), "shut off (unknown)") << "defined, never started";
    ASSERT_EQ(virDomainCreate(d), 0);
    ASSERT_EQ(virDomainGetState(d, &state, &reason, 0), 0);
    EXPECT_EQ(libvirt_state_words(state, reason), "") << "running: not an end";
    ASSERT_EQ(virDomainDestroy(d), 0);
    ASSERT_EQ(virDomainGetState(d, &state, &reason, 0), 0);
    EXPECT_EQ(libvirt_state_words(state, reason), "shut off (destroyed)");
    EXPECT_EQ(virDomainUndefine(d), 0);
    virDomainFree(d);
    EXPECT_EQ(pvmmu_domains().count(name), 0u);
}

TEST(LibvirtWords, EventsAndStatesInVirshsWords)
{
    EXPECT_EQ(libvirt_event_words(VIR_DOMAIN_EVENT_STOPPED, VIR_DOMAIN_EVENT_STOPPED_SHUTDOWN), "shut off (shutdown)");
    EXPECT_EQ(libvirt_event_words(VIR_DOMAIN_EVENT_STOPPED, VIR_DOMAIN_EVENT_STOPPED_DESTROYED),
              "shut off (destroyed)");
    EXPECT_EQ(libvirt_event_words(VIR_DOMAIN_EVENT_CRASHED, VIR_DOMAIN_EVENT_CRASHED_PANICKED), "crashed (panicked)");
    EXPECT_EQ(libvirt_event_words(VIR_DOMAIN_EVENT_STOPPED, 99), "shut off (unknown)");
    EXPECT_EQ(libvirt_event_words(VIR_DOMAIN_EVENT_STOPPED, -1), "shut off (unknown)");
    EXPECT_EQ(libvirt_event_words(VIR_DOMAIN_EVENT_RESUMED, 0), "") << "not an end";
    EXPECT_EQ(libvirt_state_words(VIR_DOMAIN_CRASHED, VIR_DOMAIN_CRASHED_PANICKED), "crashed (panicked)");
    EXPECT_EQ(libvirt_state_words(VIR_DOMAIN_SHUTOFF, VIR_DOMAIN_SHUTOFF_SHUTDOWN), "shut off (shutdown)");
    EXPECT_EQ(libvirt_state_words(VIR_DOMAIN_PAUSED, VIR_DOMAIN_PAUSED_CRASHED), "paused (crashed)");
    EXPECT_EQ(libvirt_state_words(VIR_DOMAIN_PAUSED, VIR_DOMAIN_PAUSED_USER), "");
}

#endif

} // namespace
} // namespace pvmmu::run
