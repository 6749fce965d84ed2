// The AML search behind ACPI soft-off and pvpanic (hypervisor/arch/x86_64/boot/aml.cc):
// \_S5 declarations as firmwares write them (QEMU's, integers of every
// width, a root prefix, multi-byte PkgLength), and what must not be believed:
// a "_S5_" that is not a Name, a package cut short by the table's end,
// values that do not fit SLP_TYP. pvpanic's port from its _CRS.
#include "boot/aml.h"

#include <vector>

#include <gtest/gtest.h>

namespace pvmmu::x86 {
namespace {

using Bytes = std::vector<uint8_t>;

Bytes cat(std::initializer_list<Bytes> parts)
{
    Bytes b;
    for (const auto& p : parts) b.insert(b.end(), p.begin(), p.end());
    return b;
}

// Name (_S5_, Package (N) { elements }) with a one-byte PkgLength.
Bytes s5(uint8_t count, const Bytes& elements, const Bytes& name = {'_', 'S', '5', '_'})
{
    return cat({{0x08}, name, {0x12, uint8_t(2 + elements.size()), count}, elements});
}

bool find(const Bytes& aml, uint8_t& a, uint8_t& b) { return aml_find_s5(aml.data(), aml.size(), a, b); }

TEST(AmlS5, QemusPackageOfFourZeros)
{
    // What QEMU's pc and q35 DSDTs hold (hw/i386/acpi-build.c): Package (4) { 0, 0, 0, 0 }.
    const Bytes aml = cat({{0x10, 0x05, '\\', '_', 'S', 'B', '_'}, s5(4, {0, 0, 0, 0}), {0x14, 0x08}});
    uint8_t a = 9, b = 9;
    ASSERT_TRUE(find(aml, a, b));
    EXPECT_EQ(a, 0);
    EXPECT_EQ(b, 0);
}

TEST(AmlS5, IntegersOfEveryWidth)
{
    uint8_t a = 0, b = 0;
    ASSERT_TRUE(find(s5(2, {0x0a, 0x05, 0x0b, 0x07, 0x00}), a, b));   // BytePrefix 5, WordPrefix 7
    EXPECT_EQ(a, 5);
    EXPECT_EQ(b, 7);
    ASSERT_TRUE(find(s5(2, {0x01, 0x0c, 0x06, 0, 0, 0}), a, b));       // One, DWordPrefix 6
    EXPECT_EQ(a, 1);
    EXPECT_EQ(b, 6);
    ASSERT_TRUE(find(s5(1, {0x0e, 3, 0, 0, 0, 0, 0, 0, 0}), a, b));    // one element: b = a
    EXPECT_EQ(a, 3);
    EXPECT_EQ(b, 3);
}

TEST(AmlS5, RootPrefixAndLongPkgLength)
{
    // Name (\_S5_, ...) with a two-byte PkgLength: lead byte 0x40 | bits 3-0, then bits 11-4.
    const Bytes elements = {0x0a, 0x04, 0x0a, 0x02};
    const size_t len = 2 + 1 + elements.size();   // PkgLength (2 bytes), NumElements, elements
    const Bytes aml = cat({{0x08, '\\', '_', 'S', '5', '_', 0x12, uint8_t(0x40 | (len & 0x0f)), uint8_t(len >> 4), 2},
                           elements});
    uint8_t a = 0, b = 0;
    ASSERT_TRUE(find(aml, a, b));
    EXPECT_EQ(a, 4);
    EXPECT_EQ(b, 2);
}

TEST(AmlS5, SkipsWhatIsNotTheDeclaration)
{
    // A string "_S5_" (a debug message) first, then the real one.
    const Bytes aml = cat({{0x0d, 'x', '_', 'S', '5', '_', 0x12, 0x04, 0x01, 0x0a, 0x06, 0x00}, s5(2, {0x0a, 0x05, 0x00})});
    uint8_t a = 0, b = 0;
    ASSERT_TRUE(find(aml, a, b));
    EXPECT_EQ(a, 5);
}

TEST(AmlS5, RefusesWhatCannotBeBelieved)
{
    uint8_t a = 0, b = 0;
    EXPECT_FALSE(find({}, a, b));
    EXPECT_FALSE(find(s5(2, {0x0a, 0x08, 0x00}), a, b)) << "8 does not fit SLP_TYP's 3 bits";
    EXPECT_FALSE(find(s5(2, {0xff, 0x00}), a, b)) << "Ones is not a sleep type";
    EXPECT_FALSE(find(s5(2, {0x70, 0x00}), a, b)) << "a Store, not data";
    EXPECT_FALSE(find(s5(0, {}), a, b)) << "no elements";
    Bytes cut = s5(2, {0x0a, 0x05, 0x00});
    cut.resize(cut.size() - 2);   // the table ends inside the package
    EXPECT_FALSE(find(cut, a, b));
    EXPECT_FALSE(find({0x08, '_', 'S', '5', '_', 0x12, 0x7f, 0x02, 0x00, 0x00}, a, b)) << "PkgLength past the end";
    EXPECT_FALSE(find({0x08, '_', 'S', '5', '_', 0x12, 0xc0}, a, b)) << "PkgLength's bytes past the end";
    EXPECT_FALSE(find({0x08, '_', 'S', '4', '_', 0x12, 0x03, 0x01, 0x00}, a, b)) << "S4 is not S5";
}

// Device (PEVT) { Name (_HID, "QEMU0001") Name (_CRS, ResourceTemplate () { IO (Decode16, P, P, 1, 1) }) }.
Bytes pvpanic_device(uint16_t port)
{
    const uint8_t lo = uint8_t(port), hi = uint8_t(port >> 8);
    return {0x5b, 0x82, 0x30, 'P', 'E', 'V', 'T', 0x08, '_', 'H', 'I', 'D', 0x0d, 'Q', 'E', 'M', 'U', '0', '0', '0', '1',
            0x00, 0x08, '_', 'C', 'R', 'S', 0x11, 0x0d, 0x0a, 0x0a, 0x47, 0x01, lo, hi, lo, hi, 0x01, 0x01, 0x79, 0x00};
}

TEST(AmlPvpanic, PortFromItsResources)
{
    const Bytes aml = cat({{0x10, 0x05}, pvpanic_device(0x505)});
    uint16_t port = 0;
    ASSERT_TRUE(aml_find_pvpanic(aml.data(), aml.size(), port));
    EXPECT_EQ(port, 0x505);
    const Bytes other = pvpanic_device(0x1234);
    ASSERT_TRUE(aml_find_pvpanic(other.data(), other.size(), port));
    EXPECT_EQ(port, 0x1234);
}

TEST(AmlPvpanic, NothingWithoutTheDeviceOrItsPort)
{
    uint16_t port = 0;
    Bytes aml = pvpanic_device(0x505);
    aml[13] = 'X';   // another _HID
    EXPECT_FALSE(aml_find_pvpanic(aml.data(), aml.size(), port));
    aml = pvpanic_device(0x505);
    aml.resize(aml.size() - 6);   // cut inside the IO descriptor
    EXPECT_FALSE(aml_find_pvpanic(aml.data(), aml.size(), port));
    aml = pvpanic_device(0x505);
    EXPECT_FALSE(aml_find_pvpanic(aml.data(), aml.size(), port, 8)) << "the descriptor is beyond the window";
}

} // namespace
} // namespace pvmmu::x86
