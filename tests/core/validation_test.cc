// Entry rules per level (docs/design.md §4): L2-L4 entries name validated tables of the next
// lower level of the same domain; disallowed flags (cache attributes, global,
// protection keys, superpages) are refused; the hypervisor's L4 slots are never
// the guest's; whole-table validation applies the same rules to every entry.
#include "support/core_fixture.h"

namespace pvmmu::test {
namespace {

class ValidationTest : public CoreTest {
protected:
    long one(Mfn t, unsigned index, uint64_t val, unsigned cmd = MMU_NORMAL_PT_UPDATE)
    {
        unsigned done = 99;
        const long rc = mmu_update({mmu_update_t{ptr(t, index, cmd), val}}, &done);
        EXPECT_EQ(done, rc == 0 ? 1u : 0u);
        return rc;
    }
};

TEST_F(ValidationTest, UpperLevelEntryMustNameATableOfTheNextLevel)
{
    struct Case {
        Mfn table;
        Mfn target;
    } cases[] = {
        {l2(), l2()}, {l2(), l3()}, {l2(), l4()}, {l2(), lay.mfn(700)},   // L2 -> not an L1
        {l3(), l1_of(0)}, {l3(), l3()},                                   // L3 -> not an L2
        {l4(), l2()}, {l4(), l1_of(512)},                                 // L4 -> not an L3
    };
    for (const Case& c : cases) {
        Snapshot before(m);
        EXPECT_EQ(one(c.table, 7, map(c.target, P | US | A)), -XEN_EINVAL) << c.table.v << " " << c.target.v;
        EXPECT_TRUE(unchanged(before, m));
    }
}

TEST_F(ValidationTest, UpperLevelEntryNamingAnotherDomainsTableIsEperm)
{
    DomainLayout lay2;
    ASSERT_NE(m.create_domain(2, 64, 1, lay2), nullptr);
    Snapshot before(m);
    EXPECT_EQ(one(l2(), 7, map(lay2.mfn(3), kTableLinkFlags)), -XEN_EPERM);
    EXPECT_EQ(one(l3(), 7, map(lay2.mfn(2), kTableLinkFlags)), -XEN_EPERM);
    EXPECT_EQ(one(l4(), 7, map(lay2.mfn(1), kTableLinkFlags)), -XEN_EPERM);
    EXPECT_TRUE(unchanged(before, m));
}

TEST_F(ValidationTest, DisallowedFlagsAtUpperLevelsAreEinval)
{
    const std::pair<Mfn, Mfn> links[] = {{l2(), l1_of(0)}, {l3(), l2()}, {l4(), l3()}};
    for (auto [table_mfn, target] : links) {
        for (uint64_t bit : {PWT, PCD, PS, G, uint64_t(1) << 60}) {
            Snapshot before(m);
            // Flag change of the existing link, and a new link with the bit.
            const unsigned existing = table_mfn == l4() ? 1 : 0;
            EXPECT_EQ(one(table_mfn, existing, map(target, kTableLinkFlags | bit), MMU_ATOMIC_PT_UPDATE),
                      -XEN_EINVAL);
            EXPECT_EQ(one(table_mfn, 9, map(target, kTableLinkFlags | bit)), -XEN_EINVAL);
            EXPECT_TRUE(unchanged(before, m));
        }
    }
}

TEST_F(ValidationTest, EntryNamingAFrameBeyondMemoryIsEinval)
{
    for (Mfn t : {l1_of(600), l2(), l3(), l4()}) {
        Snapshot before(m);
        EXPECT_EQ(one(t, 9, map(Mfn{kMachineFrames + 1}, P | US | A)), -XEN_EINVAL);
        EXPECT_EQ(one(t, 9, map(Mfn{pte_bit::ADDR >> kPageShift}, P | US | A)), -XEN_EINVAL);
        EXPECT_TRUE(unchanged(before, m));
    }
}

TEST_F(ValidationTest, L4WithContentInAReservedSlotDoesNotValidate)
{
    make_read_only(700);
    table(lay.mfn(700))[1] = map(l3(), kTableLinkFlags);
    table(lay.mfn(700))[256] = 0x1000;   // even a non-present value
    Snapshot before(m);
    unsigned done = 99;
    EXPECT_EQ(mmuext({op_mfn(MMUEXT_PIN_L4_TABLE, lay.mfn(700))}, &done), -XEN_EINVAL);
    EXPECT_EQ(done, 0u);
    EXPECT_TRUE(only(Changes(before).flush(cpus({0, 1})), m));
}

TEST_F(ValidationTest, TableMappingAPageTableWritableDoesNotValidate)
{
    make_read_only(700);
    table(lay.mfn(700))[0] = map(800, kDataFlags);
    table(lay.mfn(700))[1] = map(l1_of(0), P | RW | A);
    Snapshot before(m);
    unsigned done = 99;
    EXPECT_EQ(mmuext({op_mfn(MMUEXT_PIN_L1_TABLE, lay.mfn(700))}, &done), -XEN_EINVAL);
    EXPECT_EQ(done, 0u);
    EXPECT_TRUE(only(Changes(before).flush(cpus({0, 1})), m));
}

TEST_F(ValidationTest, TableThatMapsItselfWritableDoesNotValidate)
{
    make_read_only(700);
    table(lay.mfn(700))[4] = map(700, kDataFlags);
    Snapshot before(m);
    unsigned done = 99;
    EXPECT_EQ(mmuext({op_mfn(MMUEXT_PIN_L1_TABLE, lay.mfn(700))}, &done), -XEN_EINVAL);
    EXPECT_EQ(done, 0u);
    EXPECT_TRUE(only(Changes(before).flush(cpus({0, 1})), m));
}

TEST_F(ValidationTest, TableThatMapsItselfReadOnlyValidates)
{
    // A read-only self-map is a legitimate (recursive) mapping.
    make_read_only(700);
    table(lay.mfn(700))[4] = map(700, P | US | A);
    Snapshot before(m);
    unsigned done = 0;
    EXPECT_EQ(mmuext({op_mfn(MMUEXT_PIN_L1_TABLE, lay.mfn(700))}, &done), 0);
    EXPECT_EQ(done, 1u);
    EXPECT_TRUE(only(Changes(before)
                         .flush(cpus({0, 1}))
                         .type_info(lay.mfn(700), PageType::L1, 1, ti::kValidated | ti::kPinned)
                         .count(lay.mfn(700), +2),
                     m));
}

TEST_F(ValidationTest, ValidationAddsTheUserBitOnlyOnSuccess)
{
    make_read_only(700);
    for (unsigned i = 0; i < 8; ++i) table(lay.mfn(700))[i] = map(800 + i, P | A);
    Snapshot before(m);
    Changes expected(before);
    expected.flush(cpus({0, 1})).type_info(lay.mfn(700), PageType::L1, 1, ti::kValidated | ti::kPinned);
    expected.count(lay.mfn(700), +1);
    for (unsigned i = 0; i < 8; ++i)
        expected.word(lay.mfn(700), i, map(800 + i, P | US | A)).count(lay.mfn(800 + i), +1);
    unsigned done = 0;
    EXPECT_EQ(mmuext({op_mfn(MMUEXT_PIN_L1_TABLE, lay.mfn(700))}, &done), 0);
    EXPECT_EQ(done, 1u);
    EXPECT_TRUE(only(expected, m));
}

// validate_table skips its adjusting pass when every present entry has US:
// one entry without it, anywhere, still gets it.
TEST_F(ValidationTest, ValidationAddsTheUserBitToTheOneEntryWithoutIt)
{
    make_read_only(700);
    for (unsigned i = 0; i < 8; ++i) table(lay.mfn(700))[i] = map(800 + i, P | US | A);
    table(lay.mfn(700))[3] = map(803, P | A);
    Snapshot before(m);
    Changes expected(before);
    expected.flush(cpus({0, 1})).type_info(lay.mfn(700), PageType::L1, 1, ti::kValidated | ti::kPinned);
    expected.count(lay.mfn(700), +1).word(lay.mfn(700), 3, map(803, P | US | A));
    for (unsigned i = 0; i < 8; ++i) expected.count(lay.mfn(800 + i), +1);
    unsigned done = 0;
    EXPECT_EQ(mmuext({op_mfn(MMUEXT_PIN_L1_TABLE, lay.mfn(700))}, &done), 0);
    EXPECT_EQ(done, 1u);
    EXPECT_TRUE(only(expected, m));
}

// A pin and an unpin pass runs of absent entries eight at a time: every
// present entry is still found, whatever the run before it (eight absent
// entries exactly, fewer, many, the table's last), and one that breaks a rule
// after a long run still fails the pin.
TEST_F(ValidationTest, SparseTablePinTakesAndUnpinDropsEveryPresentEntry)
{
    const unsigned present[] = {0, 9, 10, 18, 27, 100, 263, 504, 511};
    make_read_only(700);
    for (unsigned k = 0; k < std::size(present); ++k) table(lay.mfn(700))[present[k]] = map(800 + k, P | US | A);
    Snapshot before(m);
    Changes expected(before);
    expected.flush(cpus({0, 1})).type_info(lay.mfn(700), PageType::L1, 1, ti::kValidated | ti::kPinned);
    expected.count(lay.mfn(700), +1);
    for (unsigned k = 0; k < std::size(present); ++k) expected.count(lay.mfn(800 + k), +1);
    unsigned done = 0;
    ASSERT_EQ(mmuext({op_mfn(MMUEXT_PIN_L1_TABLE, lay.mfn(700))}, &done), 0);
    EXPECT_TRUE(only(expected, m));
    Snapshot pinned(m);
    ASSERT_EQ(mmuext({op_mfn(MMUEXT_UNPIN_TABLE, lay.mfn(700))}, &done), 0);
    Changes unpinned(pinned);
    unpinned.type_info(lay.mfn(700), PageType::L1, 0, 0).count(lay.mfn(700), -1);
    for (unsigned k = 0; k < std::size(present); ++k) unpinned.count(lay.mfn(800 + k), -1);
    EXPECT_TRUE(only(unpinned, m));
}

TEST_F(ValidationTest, EntryAfterALongAbsentRunIsStillChecked)
{
    for (unsigned bad : {9u, 300u, 511u}) {
        make_read_only(700);
        uint64_t* t = table(lay.mfn(700));
        std::fill(t, t + kEntriesPerTable, 0);
        t[0] = map(800, P | US | A);
        t[bad] = map(801, P | US | A | G);
        Snapshot before(m);
        unsigned done = 99;
        EXPECT_EQ(mmuext({op_mfn(MMUEXT_PIN_L1_TABLE, lay.mfn(700))}, &done), -XEN_EINVAL) << bad;
        Changes expected(before);   // the first pin's type change flushes, as any
        if (bad == 9) expected.flush(cpus({0, 1}));
        EXPECT_TRUE(only(expected, m)) << bad;
    }
}

TEST_F(ValidationTest, FailedValidationCanBeRetriedOnceTheTableIsFixed)
{
    make_read_only(700);
    table(lay.mfn(700))[0] = map(800, P | A);
    table(lay.mfn(700))[1] = map(801, P | US | A | G);
    unsigned done = 99;
    ASSERT_EQ(mmuext({op_mfn(MMUEXT_PIN_L1_TABLE, lay.mfn(700))}, &done), -XEN_EINVAL);
    table(lay.mfn(700))[1] = map(801, P | US | A);
    Snapshot before(m);
    EXPECT_EQ(mmuext({op_mfn(MMUEXT_PIN_L1_TABLE, lay.mfn(700))}, &done), 0);
    EXPECT_EQ(done, 1u);
    // CPUs were flushed by the first attempt: none since needs it again.
    EXPECT_TRUE(only(Changes(before)
                         .type_info(lay.mfn(700), PageType::L1, 1, ti::kValidated | ti::kPinned)
                         .count(lay.mfn(700), +1)
                         .word(lay.mfn(700), 0, map(800, P | US | A))
                         .count(lay.mfn(800), +1)
                         .count(lay.mfn(801), +1),
                     m));
}

} // namespace
// Bare metal keeps its own L4 entries in the reserved slots of every validated
// guest L4 (Platform::reserved_l4_entry); they go in at validation and come out
// at devalidation, so the frame can be validated again (and never shows them
// once it is writable to the guest).
TEST_F(ValidationTest, ValidatedL4HoldsThePlatformsReservedEntriesUntilDevalidated)
{
    constexpr uint64_t kHvEntry = 0x1234000 | P | RW | A;   // no US: ring 3 cannot use it
    m.platform().reserved_l4[257] = kHvEntry;
    make_read_only(700);
    table(lay.mfn(700))[1] = map(l3(), kTableLinkFlags);
    unsigned done = 99;
    ASSERT_EQ(mmuext({op_mfn(MMUEXT_PIN_L4_TABLE, lay.mfn(700))}, &done), 0);
    EXPECT_EQ(table(lay.mfn(700))[257], kHvEntry);
    for (unsigned i = 256; i <= 271; ++i) {
        if (i != 257) {
            EXPECT_EQ(table(lay.mfn(700))[i], 0u) << "slot " << i;
        }
    }
    ASSERT_EQ(mmuext({op_mfn(MMUEXT_UNPIN_TABLE, lay.mfn(700))}, &done), 0);
    EXPECT_EQ(table(lay.mfn(700))[257], 0u);
    EXPECT_EQ(mmuext({op_mfn(MMUEXT_PIN_L4_TABLE, lay.mfn(700))}, &done), 0);
    EXPECT_EQ(table(lay.mfn(700))[257], kHvEntry);
}

} // namespace pvmmu::test
