// A fake platform for host unit tests of the guest library: guest memory is a
// flat array behind the physmap, and the transport carries out mmu_update
// (cmd 0, 2, 4), mmuext_op and XENVER_get_features on it with the ABI's value
// semantics — no validation, no TLB — recording every request. What the
// library asked for, and what its entries became, can then be checked exactly.
#pragma once

#include <cstring>
#include <functional>
#include <vector>

#include <pvmmu/abi.h>

#include "guest/guest.h"
#include "guest/pte.h"

namespace pvmmu::guest::fake {

struct Request {
    unsigned cmd;
    uint64_t gpfn;     // table
    unsigned index;    // entry
    uint64_t val;
};

class Platform final : public Transport, public Memory {
public:
    static constexpr uint64_t kFrames = 1024;
    static constexpr Mfn kFirstMfn{0x4000};
    static constexpr Va kPhysmap{0x0000'0080'0000'0000};
    // The builder's tables: the L4, L3 and L2 over the physmap and its two L1s.
    static constexpr uint64_t kL4 = 0, kL3 = 1, kL2 = 2, kFirstL1 = 3, kPtFrames = 5;

    // pvmmu's layout: frames [kFirstMfn, +kFrames), every gpfn mapped. Xen's
    // (xen_layout): the frames in reverse order, found through the P2M and
    // M2P, and only the first L1's 512 gpfns mapped.
    explicit Platform(bool xen_layout = false) : mem_(kFrames * kPageSize / 8), xen_(xen_layout)
    {
        for (uint64_t g = 0; g < kFrames; ++g) p2m_.push_back(kFirstMfn.v + (xen_ ? kFrames - 1 - g : g));
        m2p_.assign(kFirstMfn.v + kFrames, ~0ull);
        for (uint64_t g = 0; g < kFrames; ++g) m2p_[p2m_[g]] = g;
        const uint64_t link = pte::kTableLink;
        entry(kL4, table_index(kPhysmap, Level::L4)) = make_pte(mfn(kL3), link);
        entry(kL3, table_index(kPhysmap, Level::L3)) = make_pte(mfn(kL2), link);
        const unsigned mapped = xen_ ? 1 : 2;
        for (unsigned i = 0; i < mapped; ++i) entry(kL2, i) = make_pte(mfn(kFirstL1 + i), link);
        for (uint64_t g = 0; g < mapped * kEntriesPerTable; ++g)
            entry(kFirstL1 + g / kEntriesPerTable, g % kEntriesPerTable) =
                make_pte(mfn(g), g < kPtFrames ? pte::P | pte::US | pte::A : pte::P | pte::RW | pte::US | pte::A);
    }

    BootInfo boot() const
    {
        BootInfo b{.physmap = kPhysmap, .first_mfn = kFirstMfn, .nr_frames = kFrames, .l4 = Gpfn{kL4},
                   .nr_pt_frames = kPtFrames, .nr_vcpus = 1};
        if (xen_) b.p2m = p2m_.data(), b.m2p = m2p_.data(), b.m2p_entries = m2p_.size();
        return b;
    }
    Mfn mfn(uint64_t gpfn) const { return Mfn{p2m_[gpfn]}; }

    // --- Transport
    long hypercall(unsigned op, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t, uint64_t) override
    {
        ++calls;
        if (op == __HYPERVISOR_xen_version && a0 == XENVER_get_features) {
            word(Va{a1}) = uint64_t(features) << 32;
            return 0;
        }
        if (op == __HYPERVISOR_mmuext_op) {
            for (uint64_t i = 0; i < a1; ++i) mmuext_cmds.push_back(unsigned(word(Va{a0 + i * 24})));
            return 0;
        }
        if (op != __HYPERVISOR_mmu_update) return -XEN_ENOSYS;
        ++mmu_calls;
        if (before_mmu_update) before_mmu_update();
        uint32_t done = 0;
        long rc = 0;
        for (; done < a1; ++done) {
            const uint64_t ptr = word(Va{a0 + done * 16}), val = word(Va{a0 + done * 16 + 8});
            const unsigned cmd = ptr & 7;
            const uint64_t gpfn = m2p_[(ptr & ~7ull) >> kPageShift];
            const unsigned index = unsigned((ptr & (kPageSize - 1)) >> 3);
            requests.push_back(Request{cmd, gpfn, index, val});
            if (cmd == refuse || (refuse_val && refuse_val(cmd, val))) {
                rc = -XEN_EPERM;
                break;
            }
            apply(cmd, gpfn, index, val);
        }
        if (a2) word(Va{a2}) = done;
        return rc;
    }
    void relax() override {}

    // --- Memory
    bool load(Va va, uint64_t& out) override
    {
        out = word(va);
        return true;
    }
    bool store(Va va, uint64_t v) override
    {
        word(va) = v;
        return true;
    }
    bool cmpxchg(Va va, uint64_t& expected, uint64_t desired, bool& swapped) override
    {
        swapped = word(va) == expected;
        if (swapped) word(va) = desired;
        else expected = word(va);
        return true;
    }
    bool fetch(Va) override { return true; }
    void clean(Va) override { ++cleans; }
    uint64_t* direct(Va va, uint64_t) override { return in_place ? &word(va) : nullptr; }
    bool store_words(Va va, const uint64_t* words, unsigned n) override
    {
        if (++store_words_calls == store_words_fault) return false;   // as if its first page faulted
        return Memory::store_words(va, words, n);
    }

    uint64_t& entry(uint64_t gpfn, unsigned i) { return mem_[gpfn * kEntriesPerTable + i]; }
    uint64_t& word(Va va) { return mem_[(va.v - kPhysmap.v) / 8]; }

    uint32_t features = (1u << XENFEAT_mmu_pt_update_preserve_ad) | (1u << PVMMU_FEAT_flag_range_update);
    unsigned refuse = 8;   // a command answered -EPERM (8: none)
    bool xen_cmd2 = false;   // cmd 2 as Xen 4.17 does it: ORs the entry's A/D into val always
    // Requests answered -EPERM too when this says so (a frame the domain may
    // not map, say); none when empty.
    std::function<bool(unsigned cmd, uint64_t val)> refuse_val;
    // Runs as each mmu_update call arrives (hardware setting A/D just before, say).
    std::function<void()> before_mmu_update;
    bool in_place = false; // direct() gives the library a pointer (bare metal) or not (sim)
    unsigned store_words_fault = 0;   // this store_words call (1, 2, ...) faults; 0: none
    unsigned store_words_calls = 0;
    std::vector<Request> requests;
    std::vector<unsigned> mmuext_cmds;
    unsigned calls = 0, mmu_calls = 0, cleans = 0;

private:
    void apply(unsigned cmd, uint64_t gpfn, unsigned index, uint64_t val)
    {
        uint64_t& e = entry(gpfn, index);
        const uint64_t us = [](uint64_t v) { return (v & pte::P) ? v | pte::US : v; }(val);
        if (cmd == MMU_NORMAL_PT_UPDATE) e = us;
        if (cmd == MMU_ATOMIC_PT_UPDATE && xen_cmd2) {   // Xen's: always `val | (*ptr & (A|D))`
            e = us | (e & pte::AD);
        } else if (cmd == MMU_ATOMIC_PT_UPDATE) {   // abi.md §4.3: fold, hand back or overwrite
            if (!(e & pte::P)) e = us;
            else if (!(us & pte::P)) e = (us & ~pte::AD) | (e & pte::AD);
            else if (((us ^ e) & pte::ADDR) == 0) e = us | (e & pte::AD);
            else e = us;
        }
        if (cmd == MMU_FLAG_RANGE_UPDATE) {
            const abi::FlagRange fr = abi::decode_flag_range(val);
            for (unsigned i = index; i < index + fr.count; ++i) {
                uint64_t& x = entry(gpfn, i);
                if (!(x & pte::P)) continue;
                x = (x & ~fr.mask) | fr.bits;
                if (x & pte::P) x |= pte::US;
            }
        }
    }

    std::vector<uint64_t> mem_;
    bool xen_;
    std::vector<uint64_t> p2m_, m2p_;
};

// A guest on the fake platform with one vCPU, its library started.
struct Guest1 {
    explicit Guest1(bool xen_layout = false) : p(xen_layout) {}
    Platform p;
    Guest g;
    Cpu c{p, p, 0};
    int init_rc = g.init(c, p.boot());
};

} // namespace pvmmu::guest::fake
