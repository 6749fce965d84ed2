// Scenario table and request arrays of the core's per-PTE cost; see core_scenarios.h.
#include "core_scenarios.h"

#include <cstring>

namespace pvmmu::perf {

namespace {

// `flip` is the PTE bit step 0 changes and step 1 changes back. `multicall`:
// each request is an mmu_update of its own, the 512 batched in one multicall
// (Linux's xen_mc_* way), so the row prices a multicall entry.
struct Def {
    std::string_view name;
    unsigned cmd;
    uint64_t flip;
    bool measured[CoreRig::kSteps];
    bool multicall = false;
};

// The builder maps data pages RW and executable: step 0 sets NX or drops RW.
constexpr Def kDefs[] = {
    {"flagrange-flagonly", MMU_FLAG_RANGE_UPDATE, pte_bit::NX, {true, true}},
    {"atomic-flagonly", MMU_ATOMIC_PT_UPDATE, pte_bit::NX, {true, true}},
    {"atomic-rw-raise", MMU_ATOMIC_PT_UPDATE, pte_bit::RW, {false, true}},
    {"atomic-rw-lower", MMU_ATOMIC_PT_UPDATE, pte_bit::RW, {true, false}},
    {"flagrange-rw-raise", MMU_FLAG_RANGE_UPDATE, pte_bit::RW, {false, true}},
    {"flagrange-rw-lower", MMU_FLAG_RANGE_UPDATE, pte_bit::RW, {true, false}},
    {"normal-flagonly", MMU_NORMAL_PT_UPDATE, pte_bit::NX, {true, true}},
    {"multicall-normal-flagonly", MMU_NORMAL_PT_UPDATE, pte_bit::NX, {true, true}, true},
    {"multicall-normal-rw-raise", MMU_NORMAL_PT_UPDATE, pte_bit::RW, {false, true}, true},
};

} // namespace

std::vector<std::string_view> CoreRig::names()
{
    std::vector<std::string_view> out;
    for (const Def& d : kDefs) out.push_back(d.name);
    return out;
}

CoreRig::CoreRig()
{
    d_ = m_.create_domain(1, 2048, 1, lay_);
    // gpfns 512..1023: all data frames (the page tables are gpfns 0..6).
    l1_ = lay_.mfn(4);
    const uint64_t* t = m_.table(l1_);
    initial_.assign(t, t + kEntriesPerTable);
}

std::unique_ptr<CoreRig> CoreRig::make(std::string_view scenario)
{
    for (const Def& def : kDefs) {
        if (def.name != scenario) continue;
        std::unique_ptr<CoreRig> r(new CoreRig());
        if (!r->d_) return nullptr;
        const uint64_t base = maddr_of(r->l1_).v;
        for (unsigned s = 0; s < kSteps; ++s) {
            Step& st = r->steps_[s];
            st.measured = def.measured[s];
            if (def.cmd == MMU_FLAG_RANGE_UPDATE) {
                const uint64_t bits = (s == 0 ? ~r->initial_[0] : r->initial_[0]) & def.flip;
                st.reqs.push_back({base | def.cmd, abi::encode_flag_range(def.flip, bits, kEntriesPerTable)});
                continue;
            }
            for (unsigned i = 0; i < kEntriesPerTable; ++i) {
                const uint64_t v = s == 0 ? r->initial_[i] ^ def.flip : r->initial_[i];
                st.reqs.push_back({(base + i * sizeof(uint64_t)) | def.cmd, v});
            }
            if (def.multicall) {
                st.entries.resize(st.reqs.size());
                for (size_t i = 0; i < st.reqs.size(); ++i)
                    st.entries[i] = {__HYPERVISOR_mmu_update, 0,
                                     {reinterpret_cast<uint64_t>(&st.reqs[i]), 1, 0, DOMID_SELF, 0, 0}};
            }
        }
        return r;
    }
    return nullptr;
}

unsigned CoreRig::measured_ptes_per_round() const
{
    unsigned n = 0;
    for (const Step& s : steps_) n += s.measured ? kEntriesPerTable : 0;
    return n;
}

bool CoreRig::at_start()
{
    return std::memcmp(m_.table(l1_), initial_.data(), kPageSize) == 0;
}

} // namespace pvmmu::perf
