// Which ports a PV kernel may use and what they read (core/port_io_rules.h),
// as Xen 4.17 answers a domain granted no port (docs/abi.md §12).
#include <gtest/gtest.h>

#include "core/port_io_rules.h"

namespace pvmmu::test {
namespace {

TEST(PortIoRules, SetIoplAboveThreeIsInvalid)
{
    EXPECT_EQ(set_iopl_check(4), -XEN_EINVAL);
    EXPECT_EQ(set_iopl_check(~0u), -XEN_EINVAL);
    for (uint32_t iopl = 0; iopl <= 3; ++iopl) EXPECT_EQ(set_iopl_check(iopl), 0) << iopl;
}

TEST(PortIoRules, IoplZeroKeepsTheKernelOffThePorts)
{
    EXPECT_FALSE(port_io_allowed(0));
}

TEST(PortIoRules, IoplOneOrMoreLetsTheKernelAtThePortsAsAtVirtualCplOne)
{
    EXPECT_TRUE(port_io_allowed(1));
    EXPECT_TRUE(port_io_allowed(2));
    EXPECT_TRUE(port_io_allowed(3));
}

TEST(PortIoRules, APortNotGrantedReadsAllOnesOfItsSize)
{
    for (unsigned port : {0x20u, 0x40u, 0x61u, 0x70u, 0xcfcu, 0xcf9u, 0xffffu}) {
        EXPECT_EQ(port_read_value(port, 1, 0x12345678), 0xffu) << port;
        EXPECT_EQ(port_read_value(port, 2, 0x12345678), 0xffffu) << port;
        EXPECT_EQ(port_read_value(port, 4, 0x12345678), 0xffffffffu) << port;
    }
}

TEST(PortIoRules, OnlyA32BitAccessTo0xcf8ReadsBackThePciConfigAddress)
{
    EXPECT_TRUE(port_is_cf8(0xcf8, 4));
    EXPECT_EQ(port_read_value(0xcf8, 4, 0x80001234), 0x80001234u);
    EXPECT_FALSE(port_is_cf8(0xcf8, 1));
    EXPECT_FALSE(port_is_cf8(0xcf8, 2));
    EXPECT_FALSE(port_is_cf8(0xcf9, 4));
    EXPECT_EQ(port_read_value(0xcf8, 2, 0x80001234), 0xffffu);
    EXPECT_EQ(port_read_value(0xcf8, 1, 0x80001234), 0xffu);
}

TEST(PortIoRules, InOfAByteOrWordMergesAndOfADwordZeroExtends)
{
    const uint64_t rax = 0x1122334455667788;
    EXPECT_EQ(accumulator_after_in(rax, 1, 0xab), 0x11223344556677abu);
    EXPECT_EQ(accumulator_after_in(rax, 2, 0xabcd), 0x112233445566abcdu);
    EXPECT_EQ(accumulator_after_in(rax, 4, 0xabcdef01), 0xabcdef01u);
    EXPECT_EQ(accumulator_after_in(rax, 1, 0xffffff), 0x11223344556677ffu);   // only the byte
}

} // namespace
} // namespace pvmmu::test
