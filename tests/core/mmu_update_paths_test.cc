// mmu_update takes two paths to an L1 entry: a request alone goes through
// pt_update (one checked change), a run of two or more on one L1 through
// l1_run (core/l1_run.h: references and the chunk set up once for the run).
// Both must make the same change and give the same answer. Two machines built
// alike get the same random requests, one alone on the first machine and in
// the middle of a run on the second (between two requests that rewrite other
// entries of the same L1 with their own values); after every request the two
// machines must hold the same memory, the same frame table and the same
// recorded flushes, and the calls must agree on the errno and the done count.
#include "support/core_fixture.h"

#include <cstring>
#include <random>

namespace pvmmu::test {
namespace {

class MmuUpdatePathsTest : public CoreTest {
protected:
    void SetUp() override
    {
        CoreTest::SetUp();
        d2 = m2.create_domain(kDom, kDomFrames, 2, lay2);
        ASSERT_NE(d2, nullptr);
        ASSERT_EQ(lay2.mfn(0), lay.mfn(0));   // the same frames: requests name machine addresses
    }

    // Every difference between the two machines, the first few: the frame
    // table, and the memory of every frame (`whole`) or of the L1s alone.
    std::vector<std::string> differences(bool whole)
    {
        std::vector<std::string> out;
        Hypervisor &a = m.hv(), &b = m2.hv();
        for (uint64_t i = 0; i < a.mem().nr_frames && out.size() < 8; ++i) {
            const FrameInfo &fa = a.frame(Mfn{i}), &fb = b.frame(Mfn{i});
            if (fa.count.load() != fb.count.load() || fa.type_info.load() != fb.type_info.load() ||
                fa.owner.load() != fb.owner.load())
                out.push_back("mfn " + std::to_string(i) + ": alone count " + std::to_string(fa.count) +
                              " type_info " + describe_type_info(fa.type_info) + ", in a run count " +
                              std::to_string(fb.count) + " type_info " + describe_type_info(fb.type_info));
            if (!whole && Mfn{i} != l1_of(0) && Mfn{i} != l1_of(kEntriesPerTable)) continue;
            const uint64_t *ta = a.mem().table(Mfn{i}), *tb = b.mem().table(Mfn{i});
            if (std::memcmp(ta, tb, kPageSize) == 0) continue;
            for (unsigned w = 0; w < kEntriesPerTable && out.size() < 8; ++w)
                if (ta[w] != tb[w])
                    out.push_back("mfn " + std::to_string(i) + " word " + std::to_string(w) +
                                  ": alone 0x" + hex(ta[w]) + ", in a run 0x" + hex(tb[w]));
        }
        const auto &fla = m.platform().flushes, &flb = m2.platform().flushes;
        if (fla.size() != flb.size()) out.push_back("flushes: alone " + std::to_string(fla.size()) +
                                                  ", in a run " + std::to_string(flb.size()));
        return out;
    }

    static std::string hex(uint64_t x)
    {
        char s[20];
        snprintf(s, sizeof s, "%llx", static_cast<unsigned long long>(x));
        return s;
    }

    sim::DirectMachine m2{kMachineFrames};
    DomainLayout lay2;
    Domain* d2 = nullptr;
};

TEST_F(MmuUpdatePathsTest, ARequestAloneAndInARunMakeTheSameChangeAndAnswer)
{
    std::mt19937_64 rng(20261207);
    auto pick = [&](uint64_t n) { return rng() % n; };
    // Flags a PTE may carry, those the core refuses among them.
    const uint64_t kFlagChoices[] = {P, RW, US, A, D, NX, PWT, PCD, G, uint64_t(1) << 7,
                                     uint64_t(1) << 9, uint64_t(1) << 52, uint64_t(1) << 58,
                                     uint64_t(1) << 51};
    unsigned applied = 0, refused = 0;
    constexpr int kSteps = 3000;
    for (int step = 0; step < kSteps; ++step) {
        // The entry changed: a data frame's mapping, in either L1.
        const uint64_t g = 5 + pick(kDomFrames - 5);
        // Its new frame: often the one it maps (a protection change, as
        // Linux's mprotect), else the domain's (page tables among them), some
        // the hypervisor's, some past the end of memory.
        Mfn target;
        switch (pick(8)) {
        case 0: target = Mfn{pick(32)}; break;
        case 1: target = Mfn{kMachineFrames + pick(4)}; break;
        case 2: target = lay.mfn(pick(5)); break;
        case 3: target = lay.mfn(pick(kDomFrames)); break;
        default: target = Pte{*pte(g)}.mfn(); break;
        }
        uint64_t flags = 0;
        for (uint64_t f : kFlagChoices)
            if (pick(3) == 0) flags |= f;
        if (pick(4)) flags |= P;
        const uint64_t val = pick(16) == 0 ? pick(1ull << 20) << 1 : Pte::make(target, flags).v;
        const unsigned cmds[] = {MMU_NORMAL_PT_UPDATE, MMU_ATOMIC_PT_UPDATE, MMU_PT_UPDATE_NO_TRANSLATE};
        const unsigned cmd = cmds[pick(3)];
        // What hardware may have set meanwhile: A and D on a present entry, in both.
        if (pick(4) == 0 && (*pte(g) & P)) {
            const uint64_t ad = (pick(2) ? A : 0) | (pick(2) ? D : 0);
            *pte(g) |= ad;
            m2.table(l1_of(g))[idx(g)] |= ad;
        }
        SCOPED_TRACE(testing::Message() << "step " << step << " gpfn " << g << " cmd " << cmd << " val 0x"
                                        << std::hex << val);

        const mmu_update_t r = req(g, cmd, val);
        unsigned done_alone = 99;
        const long rc_alone = mmu_update({r}, &done_alone);

        // Neighbours in the same L1, rewritten with their own values.
        const unsigned i = idx(g);
        const unsigned before_i = i == 0 ? 1 : i - 1, after_i = i == kEntriesPerTable - 1 ? i - 2 : i + 1;
        const uint64_t* t2 = m2.table(l1_of(g));
        const std::vector<mmu_update_t> run = {
            mmu_update_t{ptr(l1_of(g), before_i, MMU_NORMAL_PT_UPDATE), t2[before_i]}, r,
            mmu_update_t{ptr(l1_of(g), after_i, MMU_NORMAL_PT_UPDATE), t2[after_i]}};
        unsigned done_run = 99;
        const long rc_run = m2.call(d2->vcpus[0], __HYPERVISOR_mmu_update, uint64_t(run.data()), run.size(),
                                    uint64_t(&done_run), DOMID_SELF);

        ASSERT_EQ(rc_run, rc_alone);
        ASSERT_EQ(done_run, rc_alone == 0 ? 3u : 1u);
        ASSERT_EQ(done_alone, rc_alone == 0 ? 1u : 0u);
        const std::vector<std::string> diff = differences(step % 250 == 0 || step == kSteps - 1);
        ASSERT_TRUE(diff.empty()) << testing::PrintToString(diff);
        (rc_alone == 0 ? applied : refused)++;
    }
    // Both outcomes were exercised many times.
    EXPECT_GT(applied, 500u);
    EXPECT_GT(refused, 500u);
}

} // namespace
} // namespace pvmmu::test
