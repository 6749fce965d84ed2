// mmu_update takes two paths to an L1 entry: a request alone goes through
// pt_update (one checked change), a run of two or more on one L1 through
// l1_run (core/l1_run.h: references and the chunk set up once for the run).
// Both must make the same change and give the same answer. Two machines built
// alike get the same three random requests on entries of one L1 (the middle
// one's frame often mapped by a neighbour too, page-table frames among the
// frames mapped, and frames pinned and unpinned as L1s between steps): the
// first machine takes them one call each, in order, stopping at the first
// that fails; the second takes them as one call. After every step the two
// machines must hold the same memory, the same frame table and the same
// recorded flushes (each one's CPUs and request), and the call of three must
// answer the failing request's errno (or 0) and count as done those that
// succeeded alone.
#include "support/core_fixture.h"

#include <algorithm>
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
        for (size_t k = 0; k < std::max(fla.size(), flb.size()) && out.size() < 8; ++k) {
            const bool same = k < fla.size() && k < flb.size() && fla[k].cpus == flb[k].cpus &&
                              fla[k].req.kind == flb[k].req.kind &&
                              (fla[k].req.kind != FlushKind::Page ||
                               fla[k].req.va == flb[k].req.va);
            if (!same)
                out.push_back("flush " + std::to_string(k) + ": alone " +
                              (k < fla.size() ? describe_flush(fla[k]) : "none") + ", in a run " +
                              (k < flb.size() ? describe_flush(flb[k]) : "none"));
        }
        return out;
    }

    // A call of `hc` with the `n` requests at `p` on the second machine.
    long call2(unsigned hc, const void* p, uint64_t n, unsigned* done)
    {
        return m2.call(d2->vcpus[0], hc, uint64_t(p), n, uint64_t(done), DOMID_SELF);
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

TEST_F(MmuUpdatePathsTest, RequestsAloneAndInARunMakeTheSameChangesAndAnswer)
{
    std::mt19937_64 rng(20261207);
    auto pick = [&](uint64_t n) { return rng() % n; };
    // Flags a PTE may carry, each a third of the time; then rarer ones, most
    // of which the core refuses in an L1 entry (core/pagetable.h, disallow).
    const uint64_t kFlagChoices[] = {P, RW, US, A, D, NX};
    const uint64_t kRareFlagChoices[] = {PWT, PCD, G, uint64_t(1) << 7, uint64_t(1) << 9,
                                         uint64_t(1) << 52, uint64_t(1) << 58, uint64_t(1) << 51};
    const unsigned kCmds[] = {MMU_NORMAL_PT_UPDATE, MMU_ATOMIC_PT_UPDATE,
                              MMU_PT_UPDATE_NO_TRANSLATE};
    // A request on gpfn g's entry. Its new frame: often the one it maps (a
    // protection change, as Linux's mprotect), else `shared` (another
    // request's frame), the domain's (page tables among them), some the
    // hypervisor's, some past the end of memory; now and then not a PTE at all.
    auto random_request = [&](uint64_t g, unsigned cmd, Mfn shared) {
        Mfn target;
        switch (pick(10)) {
        case 0: target = Mfn{pick(32)}; break;
        case 1: target = Mfn{kMachineFrames + pick(4)}; break;
        case 2: target = lay.mfn(pick(5)); break;
        case 3: target = lay.mfn(pick(kDomFrames)); break;
        case 4:
        case 5: target = shared; break;
        default: target = Pte{*pte(g)}.mfn(); break;
        }
        uint64_t flags = 0;
        for (uint64_t f : kFlagChoices)
            if (pick(3) == 0) flags |= f;
        for (uint64_t f : kRareFlagChoices)
            if (pick(12) == 0) flags |= f;
        if (pick(4)) flags |= P;
        const uint64_t val = pick(16) == 0 ? pick(1ull << 20) << 1 : Pte::make(target, flags).v;
        return req(g, cmd, val);
    };
    constexpr uint64_t kRetyped = 8;   // the domain's last frames, mapped read-only to start with
    for (uint64_t g = kDomFrames - kRetyped; g < kDomFrames; ++g) {
        const mmu_update_t r = req(g, MMU_NORMAL_PT_UPDATE, map(g, P | US | A));
        unsigned done = 0;
        ASSERT_EQ(mmu_update({r}, &done), 0);
        ASSERT_EQ(call2(__HYPERVISOR_mmu_update, &r, 1, &done), 0);
    }
    unsigned succeeded[4] = {};   // steps by the number of requests that succeeded
    constexpr int kSteps = 10000;
    for (int step = 0; step < kSteps; ++step) {
        // Frames that change type between data and page table, on both
        // machines alike: a later mapping of one writable retypes it, after a
        // flush of the CPUs that may still hold a translation through it.
        if (pick(2) == 0) {
            const mmuext_op_t op = op_mfn(pick(2) ? MMUEXT_PIN_L1_TABLE : MMUEXT_UNPIN_TABLE,
                                          lay.mfn(kDomFrames - kRetyped + pick(kRetyped)));
            unsigned done1 = 99, done2 = 99;
            const long rc1 = mmuext({op}, &done1);
            const long rc2 = call2(__HYPERVISOR_mmuext_op, &op, 1, &done2);
            ASSERT_EQ(rc1, rc2);
            ASSERT_EQ(done1, done2);
        }
        // Three data frames' entries of one L1, the middle one first: some
        // of the time the entry of a frame that changes type.
        const uint64_t g =
            pick(4) ? 5 + pick(kDomFrames - 5) : kDomFrames - kRetyped + pick(kRetyped);
        const uint64_t base = g - idx(g);
        uint64_t gs[3] = {0, g, 0};
        for (unsigned k : {0u, 2u})
            do gs[k] = base + pick(kEntriesPerTable);
            while (gs[k] < 5 || gs[k] == g || (k == 2 && gs[2] == gs[0]));
        // What hardware may have set meanwhile: A and D on a present entry, in both.
        for (uint64_t gk : gs)
            if (pick(4) == 0 && (*pte(gk) & P)) {
                const uint64_t ad = (pick(2) ? A : 0) | (pick(2) ? D : 0);
                *pte(gk) |= ad;
                m2.table(l1_of(gk))[idx(gk)] |= ad;
            }
        // Mostly one command for all three, so that the run goes the fused way.
        const unsigned cmd = kCmds[pick(3)];
        auto cmd_of_neighbour = [&] { return pick(4) ? cmd : kCmds[pick(3)]; };
        const mmu_update_t middle = random_request(g, cmd, Pte{*pte(gs[pick(2) * 2])}.mfn());
        const Mfn mid_frame = Pte{middle.val}.mfn();
        const std::vector<mmu_update_t> reqs = {
            random_request(gs[0], cmd_of_neighbour(), mid_frame), middle,
            random_request(gs[2], cmd_of_neighbour(), mid_frame)};
        SCOPED_TRACE(testing::Message() << "step " << step << std::hex << ": ptr 0x" << reqs[0].ptr
                                        << " val 0x" << reqs[0].val << "; ptr 0x" << reqs[1].ptr
                                        << " val 0x" << reqs[1].val << "; ptr 0x" << reqs[2].ptr
                                        << " val 0x" << reqs[2].val);

        unsigned ok = 0;
        long rc_alone = 0;
        for (const mmu_update_t& r : reqs) {
            unsigned done = 99;
            rc_alone = mmu_update({r}, &done);
            ASSERT_EQ(done, rc_alone == 0 ? 1u : 0u);
            if (rc_alone) break;
            ++ok;
        }
        unsigned done_run = 99;
        const long rc_run = call2(__HYPERVISOR_mmu_update, reqs.data(), reqs.size(), &done_run);

        ASSERT_EQ(rc_run, rc_alone);
        ASSERT_EQ(done_run, ok);
        const std::vector<std::string> diff = differences(step % 250 == 0 || step == kSteps - 1);
        ASSERT_TRUE(diff.empty()) << testing::PrintToString(diff);
        m.platform().flushes.clear();
        m2.platform().flushes.clear();
        ++succeeded[ok];
    }
    // Every outcome was exercised many times: a refusal of each request, and all three taken.
    for (unsigned k = 0; k < 4; ++k) EXPECT_GT(succeeded[k], 1000u) << k << " succeeded";
}

} // namespace
} // namespace pvmmu::test
