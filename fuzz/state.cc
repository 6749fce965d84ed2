// State snapshots and their compare; see state.h.
#include "state.h"

#include <atomic>
#include <cstring>
#include <sstream>

#include "core/pte.h"

namespace pvmmu::fuzz {

void StateSnapshot::take(Hypervisor& hv, uint64_t first_frame, bool atomic)
{
    const uint64_t n = hv.mem().nr_frames;
    first = first_frame;
    frames.resize(n);
    for (uint64_t i = 0; i < n; ++i) {
        const FrameInfo& f = hv.frame(Mfn{i});
        frames[i] = Frame{f.owner.load(), f.count.load(), f.type_info.load(), hv.m2p(Mfn{i})};
    }
    const uint64_t nwords = (n - first) * kEntriesPerTable;
    words.resize(nwords);
    uint64_t* src = hv.mem().table(Mfn{first});
    if (atomic) {
        for (uint64_t w = 0; w < nwords; ++w)
            words[w] = std::atomic_ref<uint64_t>(src[w]).load(std::memory_order_relaxed);
    } else {
        std::memcpy(words.data(), src, nwords * sizeof(uint64_t));
    }
    bases.clear();
    for (DomId id = 0; id < kMaxDomains; ++id) {
        const Domain* d = hv.domain(id);
        for (unsigned k = 0; d && k < d->nr_vcpus; ++k) {
            const Vcpu& v = d->vcpus[k];
            bases.push_back(Base{v.guest_table.v, v.guest_table_user.v, v.has_table, v.has_user_table});
        }
    }
}

namespace {

uint64_t type_word(uint64_t x, bool strict)
{
    return strict || ti::count(x) ? x : x & (ti::kPinned | ti::kBusy);
}

} // namespace

std::string differences(const StateSnapshot& b, const StateSnapshot& a, CompareRules rules)
{
    std::ostringstream s;
    unsigned lines = 0;
    auto line = [&]() -> std::ostream& {
        ++lines;
        return s << "\n    ";
    };
    for (uint64_t i = 0; i < b.frames.size() && lines < 8; ++i) {
        const StateSnapshot::Frame &fb = b.frames[i], &fa = a.frames[i];
        if (fb.owner != fa.owner) line() << "mfn " << i << " owner " << fb.owner << " -> " << fa.owner;
        if (fb.count != fa.count) line() << "mfn " << i << " count " << fb.count << " -> " << fa.count;
        if (type_word(fb.type_info, rules.strict) != type_word(fa.type_info, rules.strict))
            line() << "mfn " << i << " type_info 0x" << std::hex << fb.type_info << " -> 0x" << fa.type_info << std::dec;
        if (fb.m2p != fa.m2p) line() << "mfn " << i << " m2p " << fb.m2p << " -> " << fa.m2p;
    }
    if (std::memcmp(b.words.data(), a.words.data(), b.words.size() * sizeof(uint64_t)) != 0) {
        for (uint64_t w = 0; w < b.words.size() && lines < 8; ++w) {
            const uint64_t mfn = b.first + w / kEntriesPerTable;
            uint64_t ignore = rules.ignore_ad ? pte_bit::AD : 0;
            if (!rules.strict && (is_table_type(ti::type(b.frames[mfn].type_info)) ||
                                  is_table_type(ti::type(a.frames[mfn].type_info))))
                ignore |= pte_bit::US;
            if ((b.words[w] ^ a.words[w]) & ~ignore)
                line() << "mfn " << mfn << " word " << w % kEntriesPerTable << " 0x" << std::hex << b.words[w]
                       << " -> 0x" << a.words[w] << std::dec;
        }
    }
    for (size_t k = 0; k < b.bases.size() && lines < 8; ++k)
        if (!(b.bases[k] == a.bases[k])) line() << "vCPU #" << k << " base pointers changed";
    return s.str();
}

} // namespace pvmmu::fuzz
