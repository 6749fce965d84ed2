// What pvmmu-run is handed, as untrusted input (docs/security.md "The
// launcher's inputs"): kernel and xl.cfg files that are no regular file, too
// big, or hold a NUL byte are refused with the path and the reason, before
// anything reads them whole or libxlutil parses them; and each domain's end
// read from the hypervisor's console lines (tools/run_domains.cc).
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "input_file.h"
#include "run_backend.h"
#include "run_domains.h"
#include "xl_config.h"

namespace pvmmu::run {
namespace {

struct Inputs : ::testing::Test {
    std::string dir = make_scratch();
    std::vector<uint8_t> bytes;
    std::string why;
    ~Inputs() override { std::filesystem::remove_all(dir); }
    std::string write(const std::string& name, const std::string& text)
    {
        const std::string p = dir + "/" + name;
        std::ofstream(p, std::ios::binary) << text;
        return p;
    }
};

TEST_F(Inputs, ADirectoryIsRefused)
{
    EXPECT_FALSE(read_input_file(".", 1 << 20, bytes, why));
    EXPECT_EQ(why, "'.': not a regular file");
}

TEST_F(Inputs, ADeviceThatNeverEndsIsRefusedUnread)
{
    EXPECT_FALSE(read_input_file("/dev/zero", 1 << 20, bytes, why));
    EXPECT_EQ(why, "'/dev/zero': not a regular file");
    EXPECT_TRUE(bytes.empty());
}

// Opened without waiting for a writer (O_NONBLOCK), then refused.
TEST_F(Inputs, AFifoIsRefusedWithoutWaiting)
{
    const std::string fifo = dir + "/fifo";
    ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
    EXPECT_FALSE(read_input_file(fifo, 1 << 20, bytes, why));
    EXPECT_EQ(why, "'" + fifo + "': not a regular file");
}

TEST_F(Inputs, AMissingFileSaysWhy)
{
    EXPECT_FALSE(read_input_file(dir + "/none", 1 << 20, bytes, why));
    EXPECT_EQ(why, "'" + dir + "/none': No such file or directory");
}

TEST_F(Inputs, AFileOverTheCapIsRefusedUnread)
{
    const std::string p = write("big", std::string(4097, 'x'));
    EXPECT_FALSE(read_input_file(p, 4096, bytes, why));
    EXPECT_NE(why.find("4097 bytes, more than the 4096"), std::string::npos) << why;
    EXPECT_TRUE(read_input_file(p, 4097, bytes, why)) << why;
    EXPECT_EQ(bytes.size(), 4097u);
}

TEST_F(Inputs, APathIsShownEscaped)
{
    EXPECT_FALSE(read_input_file(dir + "/\033[2J", 1 << 20, bytes, why));
    EXPECT_EQ(why, "'" + dir + "/\\x1b[2J': No such file or directory");
}

TEST_F(Inputs, AnXlCfgWithANulByteIsRefusedBeforeParsing)
{
    // libxlutil's lexer asserts on this one (SIGABRT) if it ever sees it.
    const std::string p = write("nul.cfg", std::string("kernel = \"a\0b\"\n", 15));
    DomainConfig c;
    std::string err;
    EXPECT_FALSE(read_xl_config(p, c, err));
    EXPECT_EQ(err, "'" + p + "': has a NUL byte: not an xl.cfg text file");
}

TEST_F(Inputs, LibxlutilsParseErrorReachesTheTerminalEscaped)
{
    // The parser quotes the text it stopped at; raw, this sets the terminal's title.
    const std::string p = write("esc.cfg", "kernel = \"x\"\nfoo = \033]0;PWNED\007 bar\n");
    DomainConfig c;
    std::string err;
    EXPECT_FALSE(read_xl_config(p, c, err));
    EXPECT_EQ(err.find('\033'), std::string::npos) << err;
    EXPECT_EQ(err.find('\007'), std::string::npos) << err;
    EXPECT_EQ(err.rfind("cannot parse '" + p + "': ", 0), 0u) << err;
}

TEST_F(Inputs, AControlCharacterInExtraIsRefused)
{
    // `extra` is printed by the hypervisor as part of its module line: a
    // newline there would put a line of the xl.cfg's choosing on the console.
    const std::string p = write("extra.cfg", "kernel = \"x\"\nextra = \"a\\npvmmu: domain 1 shut down (poweroff)\"\n");
    DomainConfig c;
    std::string err;
    EXPECT_FALSE(read_xl_config(p, c, err));
    EXPECT_NE(err.find("`extra` has a control character"), std::string::npos) << err;
}

TEST_F(Inputs, AnXlCfgThatCannotBeOpenedSaysWhy)
{
    DomainConfig c;
    std::string err;
    EXPECT_FALSE(read_xl_config(dir + "/missing.cfg", c, err));
    EXPECT_EQ(err, "'" + dir + "/missing.cfg': No such file or directory");
    EXPECT_FALSE(read_xl_config(dir, c, err));
    EXPECT_EQ(err, "'" + dir + "': not a regular file");
}

TEST_F(Inputs, AnXlCfgIsReadFromTheBytesChecked)
{
    const std::string p = write("ok.cfg", "name = \"n\"\nkernel = \"k\"\nvcpus = 2\nmemory = 32\nextra = \"x=1\"\n");
    DomainConfig c;
    std::string err;
    ASSERT_TRUE(read_xl_config(p, c, err)) << err;
    EXPECT_EQ(c.name, "n");
    EXPECT_EQ(c.kernel, "k");
    EXPECT_EQ(c.vcpus, 2);
    EXPECT_EQ(c.memory, 32);
    EXPECT_EQ(c.extra, "x=1");
}

// Four domains, two of which crashed: each is judged by its own line, in
// whatever order the domains end.
TEST(DomainEnds, EachDomainByItsOwnShutdownLine)
{
    const std::vector<std::string> console = {
        "domain 1: loading module 0 (\"k vcpus=1 frames=4096\", 100 bytes)",
        "domain 2: loading module 1 (\"k vcpus=1 frames=4096 peer=64\", 100 bytes)",
        "domain 3: peer of domain 2: 64 frames from mfn 0x100, idle",
        "domain 4: loading module 2 (\"k vcpus=1 frames=4096\", 100 bytes)",
        "domain 5: loading module 3 (\"k vcpus=1 frames=4096\", 100 bytes)",
        "pvmmu: domain 5 shut down (crash) by vCPU 0",
        "Test result: SUCCESS",
        "pvmmu: domain 2 shut down (poweroff) by vCPU 0",
        "pvmmu: domain 1 shut down (crash) by vCPU 0",
        "pvmmu: domain 4 shut down (poweroff) by vCPU 0",
        "pvmmu: no domain left running; ending (isa-debug-exit code 0x20)",
    };
    const std::vector<DomainEnd> e = domain_ends(console, 4);
    ASSERT_TRUE(from_pvmmu(e));
    std::string what;
    EXPECT_EQ(domain_verdict(e[0], what), kCrashed);
    EXPECT_EQ(what, "shut down (crash)");
    EXPECT_EQ(domain_verdict(e[1], what), 0);
    EXPECT_EQ(what, "powered off");
    EXPECT_EQ(domain_verdict(e[2], what), 0);
    EXPECT_EQ(domain_verdict(e[3], what), kCrashed);
}

TEST(DomainEnds, ARefusedDomainGetsTheLoadersReason)
{
    const std::vector<std::string> console = {
        "domain 1: loading module 0 (\"k vcpus=1 frames=4096\", 100 bytes)",
        "domain 2: loading module 1 (\"bad vcpus=1 frames=4096\", 18 bytes)",
        "domain 2: guest image refused: shorter than an ELF header",
        "pvmmu: FAILED: domain 2 was not built",
    };
    const std::vector<DomainEnd> e = domain_ends(console, 2);
    std::string what;
    EXPECT_EQ(domain_verdict(e[1], what), kRefused);
    EXPECT_EQ(what, "refused: shorter than an ELF header");
    EXPECT_EQ(domain_verdict(e[0], what), kCrashed);
    EXPECT_EQ(what, "never shut down");
}

TEST(DomainEnds, ABootCheckOnADomainNamesIt)
{
    const std::vector<std::string> console = {
        "domain 1: loading module 0 (\"k vcpus=1 frames=4096 deny=0x99999\", 100 bytes)",
        "pvmmu: FAILED: domain 1: deny= names unknown commands (629145)",
    };
    std::string what;
    EXPECT_EQ(domain_verdict(domain_ends(console, 1)[0], what), kRefused);
    EXPECT_EQ(what, "refused: deny= names unknown commands (629145)");
}

// The launcher keeps only the hypervisor's lines for this, and a bounded
// number of them, whatever a guest prints.
TEST(DomainEnds, OnlyTheHypervisorsLinesAreKept)
{
    Launch l;
    l.args = {"/bin/sh", "-c",
              "echo 'domain 1: loading module 0 (\"k\", 1 bytes)'; i=0; while [ $i -lt 70000 ]; do echo guest; "
              "i=$((i+1)); done; echo 'pvmmu: domain 1 shut down (poweroff) by vCPU 0'; exit 65"};
    Options o;
    o.quiet = true;
    o.timeout_s = 50;
    std::string why;
    std::vector<std::string> kept;
    run_child(l, o, kPoweroffStatus, false, why, &kept, domain_line);
    ASSERT_EQ(kept.size(), 2u);
    std::string what;
    EXPECT_EQ(domain_verdict(domain_ends(kept, 1)[0], what), 0) << what;
}

TEST(DomainEnds, XensConsoleIsNotPvmmus)
{
    EXPECT_FALSE(from_pvmmu(domain_ends({"(XEN) Hardware Dom0 halted"}, 1)));
}

} // namespace
} // namespace pvmmu::run
