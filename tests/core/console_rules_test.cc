// A guest's console output rules (core/console_rules.h; docs/abi.md §10
// "Console").
#include <gtest/gtest.h>

#include <string.h>

#include "core/console_rules.h"

namespace pvmmu::test {
namespace {

bool marked(const char* s, bool piece = false) { return console_line_marked(s, strlen(s), piece); }

TEST(ConsoleRules, ANegativeWriteCountIsInvalid)
{
    EXPECT_EQ(console_write_count_check(-1), -XEN_EINVAL);
    EXPECT_EQ(console_write_count_check(INT32_MIN), -XEN_EINVAL);
    EXPECT_EQ(console_write_count_check(0), 0);
    EXPECT_EQ(console_write_count_check(INT32_MAX), 0);
}

TEST(ConsoleRules, ARingWithMoreBytesThanItHoldsIsInvalid)
{
    EXPECT_EQ(console_ring_check(0, 2049, 2048), -XEN_EINVAL);
    EXPECT_EQ(console_ring_check(5, 4, 2048), -XEN_EINVAL);   // prod behind cons: 2^32 - 1 bytes
    EXPECT_EQ(console_ring_check(0xfffffff0, 0x00000800, 2048), -XEN_EINVAL);
}

TEST(ConsoleRules, ARingUpToFullTakesIndicesThatWrap)
{
    EXPECT_EQ(console_ring_check(0, 0, 2048), 0);
    EXPECT_EQ(console_ring_check(0, 2048, 2048), 0);
    EXPECT_EQ(console_ring_check(0xfffffc00, 0x00000400, 2048), 0);   // 2048 across the wrap
}

TEST(ConsoleRules, ALineStartingWithAHypervisorWordIsMarked)
{
    EXPECT_TRUE(marked("pvmmu: SUCCESS\n"));
    EXPECT_TRUE(marked("domain 1: exit 0\n"));
    EXPECT_TRUE(marked("PANIC"));
    EXPECT_TRUE(marked("pvmmux"));   // the word, whatever follows
}

TEST(ConsoleRules, OtherLinesAreNotMarked)
{
    EXPECT_FALSE(marked("hello\n"));
    EXPECT_FALSE(marked(" pvmmu: indented\n"));
    EXPECT_FALSE(marked("pvmm\n"));
    EXPECT_FALSE(marked("Domain 1\n"));
    EXPECT_FALSE(marked(""));
}

TEST(ConsoleRules, APieceIsMarkedWhenItCouldStillBecomeAHypervisorWord)
{
    EXPECT_TRUE(marked("pvm", true));
    EXPECT_TRUE(marked("do", true));
    EXPECT_TRUE(marked("", true));   // nothing yet: any word may follow
    EXPECT_FALSE(marked("pvm", false));
    EXPECT_FALSE(marked("pvx", true));
}

TEST(ConsoleRules, TheMarkNamesTheDomainInDecimal)
{
    char m[kConsoleMarkSize];
    console_mark(0, m);
    EXPECT_STREQ(m, "(d0) ");
    console_mark(7, m);
    EXPECT_STREQ(m, "(d7) ");
    console_mark(65535, m);
    EXPECT_STREQ(m, "(d65535) ");
    console_mark(UINT32_MAX, m);
    EXPECT_STREQ(m, "(d4294967295) ");
}

TEST(ConsoleRules, AnInputRingThatClaimsAllItHoldsOrMoreHasNoRoom)
{
    EXPECT_EQ(console_ring_room(0, 1024, 1024), 0u);
    EXPECT_EQ(console_ring_room(0, 1025, 1024), 0u);
    EXPECT_EQ(console_ring_room(0, 5000, 1024), 0u);
    EXPECT_EQ(console_ring_room(5, 4, 1024), 0u);   // prod behind cons
}

TEST(ConsoleRules, AnInputRingHasTheRoomItsIndicesLeaveAcrossTheWrap)
{
    EXPECT_EQ(console_ring_room(0, 0, 1024), 1024u);
    EXPECT_EQ(console_ring_room(100, 1123, 1024), 1u);
    EXPECT_EQ(console_ring_room(0xffffff00, 0x00000010, 1024), 1024u - 0x110u);
}

} // namespace
} // namespace pvmmu::test
