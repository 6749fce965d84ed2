// xl.cfg as pvmmu-run reads it (tools/xl_config.cc): `ramdisk` taken and
// checked, the command line built from `cmdline`, `root` and `extra` as xl
// builds it, every key the launcher does not use named in a warning, and the
// keys without which the domain would boot something else refused. Each
// domain's end found by its kernel's module when ramdisks take module
// indexes too (tools/run_domains.cc).
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "run_backend.h"
#include "run_domains.h"
#include "xl_config.h"

namespace pvmmu::run {
namespace {

struct XlConfig : ::testing::Test {
    std::string dir = make_scratch();
    DomainConfig c;
    std::string err;
    ~XlConfig() override { std::filesystem::remove_all(dir); }
    bool read(const std::string& text)
    {
        const std::string p = dir + "/d.cfg";
        std::ofstream(p, std::ios::binary) << text;
        return read_xl_config(p, c, err);
    }
};

TEST(XlConfigKeys, StatementsOnlyNotStringsCommentsOrLists)
{
    const std::string text =
        "# kernel = \"in a comment\"\n"
        "name = \"a; b = 1\"  # disk = ['x']\n"
        "kernel='k'; ramdisk = \"r\"\n"
        "disk = [ 'phy:/dev/x,xvda,w',\n"
        "         'vif = 3' ]\n"
        "on_crash = \"destroy\"\n"
        "name = \"again\"\n"
        "extra += \"more\"\n";
    const std::vector<std::string> want = {"name", "kernel", "ramdisk", "disk", "on_crash", "extra"};
    EXPECT_EQ(xl_config_keys(text), want);
}

TEST_F(XlConfig, RamdiskIsTaken)
{
    ASSERT_TRUE(read("kernel = \"k\"\nramdisk = \"/boot/initrd.gz\"\n")) << err;
    EXPECT_EQ(c.ramdisk, "/boot/initrd.gz");
    EXPECT_TRUE(c.warnings.empty());
}

TEST_F(XlConfig, EmptyRamdiskIsRefused)
{
    EXPECT_FALSE(read("kernel = \"k\"\nramdisk = \"\"\n"));
    EXPECT_NE(err.find("`ramdisk` is empty"), std::string::npos) << err;
}

// pvmmu's module strings mark a ramdisk module with the bare word: a kernel
// whose words had it would be taken for the previous domain's ramdisk.
TEST_F(XlConfig, TheWordRamdiskInTheCommandLineIsRefused)
{
    EXPECT_FALSE(read("kernel = \"k\"\nextra = \"quiet ramdisk\"\n"));
    EXPECT_NE(err.find("the word `ramdisk`"), std::string::npos) << err;
    ASSERT_TRUE(read("kernel = \"k\"\nextra = \"ramdisk_size=4096 ramdisk=x\"\n")) << err;
}

TEST_F(XlConfig, UnusedKeysAreWarningsNamingThem)
{
    ASSERT_TRUE(read("kernel = \"k\"\nmaxmem = 512\non_crash = \"preserve\"\nvif = [ 'bridge=xenbr0' ]\n")) << err;
    const std::vector<std::string> want = {"`maxmem` is not used by pvmmu-run: ignored",
                                           "`on_crash` is not used by pvmmu-run: ignored",
                                           "`vif` is not used by pvmmu-run: ignored"};
    EXPECT_EQ(c.warnings, want);
}

TEST_F(XlConfig, ABootLoaderIsAnError)
{
    EXPECT_FALSE(read("kernel = \"k\"\nbootloader = \"pygrub\"\n"));
    EXPECT_NE(err.find("`bootloader` is set"), std::string::npos) << err;
}

TEST_F(XlConfig, AnotherTypeIsAnErrorPvIsTaken)
{
    EXPECT_FALSE(read("kernel = \"k\"\ntype = \"hvm\"\n"));
    EXPECT_NE(err.find("pvmmu boots PV domains only"), std::string::npos) << err;
    EXPECT_FALSE(read("kernel = \"k\"\nbuilder = \"hvm\"\n"));
    EXPECT_NE(err.find("pvmmu boots PV domains only"), std::string::npos) << err;
    EXPECT_FALSE(read("kernel = \"k\"\npvh = 1\n"));
    EXPECT_NE(err.find("`pvh` is set"), std::string::npos) << err;
    ASSERT_TRUE(read("kernel = \"k\"\ntype = \"pv\"\n")) << err;
    EXPECT_TRUE(c.warnings.empty());
}

TEST_F(XlConfig, CommandLineAsXlBuildsIt)
{
    ASSERT_TRUE(read("kernel = \"k\"\nroot = \"/dev/xvda1 ro\"\nextra = \"console=hvc0\"\n")) << err;
    EXPECT_EQ(c.extra, "root=/dev/xvda1 ro console=hvc0");
    ASSERT_TRUE(read("kernel = \"k\"\nroot = \"/dev/xvda1\"\n")) << err;
    EXPECT_EQ(c.extra, "root=/dev/xvda1");
    ASSERT_TRUE(read("kernel = \"k\"\ncmdline = \"quiet\"\nextra = \"console=hvc0\"\n")) << err;
    EXPECT_EQ(c.extra, "quiet");
    ASSERT_EQ(c.warnings.size(), 1u);
    EXPECT_EQ(c.warnings[0], "`root` and `extra` are ignored in favour of `cmdline`");
}

// The grant table limits (xl.cfg(5)): taken, not warned about, unset as -1;
// outside what the hypervisor takes (Xen's defaults at most), or not a
// number, refused naming the key and its range (a bare -1 is libxlutil's
// own parse error; quoted, it is a value).
TEST_F(XlConfig, GrantLimitsAreTaken)
{
    ASSERT_TRUE(read("kernel = \"k\"\n")) << err;
    EXPECT_EQ(c.max_grant_frames, -1);
    EXPECT_EQ(c.max_maptrack_frames, -1);
    ASSERT_TRUE(read("kernel = \"k\"\nmax_grant_frames = 4\nmax_maptrack_frames = 0\n")) << err;
    EXPECT_EQ(c.max_grant_frames, 4);
    EXPECT_EQ(c.max_maptrack_frames, 0);
    EXPECT_TRUE(c.warnings.empty());
    ASSERT_TRUE(read("kernel = \"k\"\nmax_grant_frames = 64\nmax_maptrack_frames = 1024\n")) << err;
    EXPECT_EQ(c.max_grant_frames, 64);
    EXPECT_EQ(c.max_maptrack_frames, 1024);
}

TEST_F(XlConfig, GrantLimitsOutOfRangeAreRefused)
{
    for (const char* v : {"0", "65", "\"-1\"", "\"many\""}) {
        EXPECT_FALSE(read(std::string("kernel = \"k\"\nmax_grant_frames = ") + v + "\n")) << v;
        EXPECT_NE(err.find("`max_grant_frames` must be a number 1..64"), std::string::npos) << err;
    }
    for (const char* v : {"1025", "\"-1\"", "\"x\""}) {
        EXPECT_FALSE(read(std::string("kernel = \"k\"\nmax_maptrack_frames = ") + v + "\n")) << v;
        EXPECT_NE(err.find("`max_maptrack_frames` must be a number 0..1024"), std::string::npos) << err;
    }
}

// Domain 1 has a ramdisk (modules 0 and 1), domain 2's kernel is module 2.
TEST(DomainEnds, ARamdiskModuleIsNoDomain)
{
    const std::vector<std::string> console = {
        "domain 1: loading module 0 (\"vmlinux vcpus=1 frames=65536\", 100 bytes)",
        "domain 1: its ramdisk: module 1 (\"initrd.gz ramdisk\", 50 bytes)",
        "domain 2: loading module 2 (\"k vcpus=1 frames=4096\", 100 bytes)",
        "pvmmu: domain 2 shut down (crash) by vCPU 0",
        "pvmmu: domain 1 shut down (poweroff) by vCPU 0",
    };
    const std::vector<DomainEnd> e = domain_ends(console, std::vector<size_t>{0, 2});
    ASSERT_EQ(e.size(), 2u);
    EXPECT_EQ(e[0].id, 1u);
    EXPECT_EQ(e[0].shutdown, "poweroff");
    EXPECT_EQ(e[1].id, 2u);
    EXPECT_EQ(e[1].shutdown, "crash");
}

} // namespace
} // namespace pvmmu::run
