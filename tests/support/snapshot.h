// A snapshot of a whole DirectMachine and an exact diff (docs/design.md §9: tests assert
// that nothing else changed). A snapshot holds every frame's owner, general count,
// type_info and machine-to-physical entry, every 64-bit word of machine memory,
// every registered vCPU's base pointers, and the platform's recorded flushes and
// base loads. A test states the changes it expects relative to a "before"
// snapshot; the check lists every field where the machine differs from that.
//
//   Snapshot before(m);
//   ... hypercall ...
//   EXPECT_TRUE(unchanged(before, m));                       // a failed request
//   EXPECT_TRUE(only(Changes(before).word(l1, 7, v).count(f, -1), m));
//
// The TLB clock and frames' tlbflush stamps are not part of it.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "sim/direct_machine.h"

namespace pvmmu::test {

struct FrameRecord {
    DomId owner;
    uint32_t count;
    uint64_t type_info;
    uint64_t m2p;
};

struct VcpuRecord {
    DomId dom;
    unsigned id;
    uint64_t table, user_table;
    bool has_table, has_user_table, online;
};

class Snapshot {
public:
    explicit Snapshot(sim::DirectMachine& m)
    {
        Hypervisor& hv = m.hv();
        const uint64_t n = hv.mem().nr_frames;
        frames.resize(n);
        for (uint64_t i = 0; i < n; ++i) {
            const FrameInfo& f = hv.frame(Mfn{i});
            frames[i] = FrameRecord{f.owner.load(), f.count.load(), f.type_info.load(), hv.m2p(Mfn{i})};
        }
        words.resize(n * kEntriesPerTable);
        std::memcpy(words.data(), hv.mem().base, n * kPageSize);
        for (DomId id = 0; id < kMaxDomains; ++id) {
            const Domain* d = hv.domain(id);
            if (!d) continue;
            for (unsigned i = 0; i < d->nr_vcpus; ++i) {
                const Vcpu& v = d->vcpus[i];
                vcpus.push_back(VcpuRecord{id, i, v.guest_table.v, v.guest_table_user.v, v.has_table,
                                           v.has_user_table, v.online});
            }
        }
        flushes = m.platform().flushes;
        base_loads = m.platform().base_loads;
    }

    uint64_t word(Mfn m, unsigned index) const { return words[m.v * kEntriesPerTable + index]; }
    const FrameRecord& frame(Mfn m) const { return frames[m.v]; }

    std::vector<FrameRecord> frames;
    std::vector<uint64_t> words;
    std::vector<VcpuRecord> vcpus;
    std::vector<sim::DirectPlatform::Flush> flushes;
    unsigned base_loads = 0;
};

inline std::string describe_type_info(uint64_t x)
{
    static const char* const kNames[] = {"none", "L1", "L2", "L3", "L4", "writable", "?6", "?7"};
    std::ostringstream s;
    s << kNames[unsigned(ti::type(x))] << " count " << ti::count(x);
    if (x & ti::kValidated) s << " validated";
    if (x & ti::kPinned) s << " pinned";
    if (x & ti::kBusy) s << " BUSY";
    return s.str();
}

inline std::string describe_flush(const sim::DirectPlatform::Flush& f)
{
    std::ostringstream s;
    s << (f.req.kind == FlushKind::All ? "flush all" : "flush page") << " cpus 0x" << std::hex
      << f.cpus.bits;
    if (f.req.kind == FlushKind::Page) s << " va 0x" << f.req.va.v;
    return s.str();
}

// The changes a test expects relative to `before`. Fields not named must be
// unchanged. Count deltas are taken relative to the before snapshot.
class Changes {
public:
    explicit Changes(const Snapshot& before) : before_(before) {}

    // Memory word `index` (a PTE, when the frame is a table) of frame m.
    Changes& word(Mfn m, unsigned index, uint64_t value)
    {
        words_[m.v * kEntriesPerTable + index] = value;
        return *this;
    }
    Changes& count(Mfn m, int delta)
    {
        counts_[m.v] = uint32_t(int64_t(before_.frame(m).count) + delta);
        return *this;
    }
    // Type count changed by delta, type and flags as they were.
    Changes& type_count(Mfn m, int delta)
    {
        const uint64_t x = type_infos_.count(m.v) ? type_infos_[m.v] : before_.frame(m).type_info;
        type_infos_[m.v] = (x & ~ti::kCountMask) | uint64_t(int64_t(ti::count(x)) + delta);
        return *this;
    }
    Changes& type_info(Mfn m, uint64_t value)
    {
        type_infos_[m.v] = value;
        return *this;
    }
    Changes& type_info(Mfn m, PageType t, uint64_t count, uint64_t flags)
    {
        return type_info(m, ti::with_type(t) | count | flags);
    }
    Changes& m2p(Mfn m, uint64_t value)
    {
        m2p_[m.v] = value;
        return *this;
    }
    Changes& base(const Vcpu& v, Mfn table, bool user = false)
    {
        auto& [t, has] = (user ? user_bases_ : bases_)[key(v)];
        t = table.v;
        has = !(user && table.v == 0);
        return *this;
    }
    // A flush appended to the platform's record, in order.
    Changes& flush(CpuMask cpus, FlushRequest req = {})
    {
        flushes_.push_back(sim::DirectPlatform::Flush{cpus, req});
        return *this;
    }
    Changes& base_loads(unsigned delta)
    {
        base_loads_ = delta;
        return *this;
    }

    // Every difference between `after` and the expected state, one line each.
    std::vector<std::string> mismatches(const Snapshot& after) const
    {
        std::vector<std::string> out;
        const Snapshot& b = before_;
        auto frame_name = [&](uint64_t mfn) {
            std::ostringstream s;
            s << "mfn " << mfn;
            const FrameRecord& f = b.frames[mfn];
            if (f.owner == kOwnerXen) s << " (xen)";
            else if (f.owner == kOwnerIo) s << " (io)";
            else if (f.owner != kOwnerFree) s << " (d" << f.owner << " gpfn " << f.m2p << ")";
            return s.str();
        };
        // `what` is a callable: names are built only for the lines reported.
        auto check = [&](auto&& what, uint64_t was, uint64_t expected, uint64_t now, auto&& show) {
            if (now == expected) return;
            std::ostringstream s;
            s << what() << ": was " << show(was) << ", expected " << show(expected) << ", now "
              << show(now);
            out.push_back(s.str());
        };
        auto hex = [](uint64_t x) {
            std::ostringstream s;
            s << "0x" << std::hex << x;
            return s.str();
        };
        auto dec = [](uint64_t x) { return std::to_string(x); };

        if (after.frames.size() != b.frames.size()) {
            out.push_back("machine size changed");
            return out;
        }
        for (uint64_t i = 0; i < b.frames.size(); ++i) {
            const FrameRecord &fb = b.frames[i], &fa = after.frames[i];
            auto field = [&](const char* f) { return [&, f] { return frame_name(i) + " " + f; }; };
            check(field("owner"), fb.owner, fb.owner, fa.owner, dec);
            check(field("count"), fb.count, lookup(counts_, i, fb.count), fa.count, dec);
            check(field("type_info"), fb.type_info, lookup(type_infos_, i, fb.type_info), fa.type_info,
                  describe_type_info);
            check(field("m2p"), fb.m2p, lookup(m2p_, i, fb.m2p), fa.m2p, hex);
        }
        // Memory: scan for differing words, then merge in the expected ones.
        std::map<uint64_t, uint64_t> seen(words_.begin(), words_.end());
        for (uint64_t w = 0; w < b.words.size(); ++w)
            if (b.words[w] != after.words[w] && !seen.count(w)) seen[w] = b.words[w];
        for (const auto& [w, ignored] : seen) {
            (void)ignored;
            auto what = [&, w] {
                return frame_name(w / kEntriesPerTable) + " word " + std::to_string(w % kEntriesPerTable);
            };
            check(what, b.words[w], lookup(words_, w, b.words[w]), after.words[w], hex);
        }
        // vCPUs.
        if (after.vcpus.size() != b.vcpus.size()) out.push_back("set of vCPUs changed");
        for (size_t i = 0; i < b.vcpus.size() && i < after.vcpus.size(); ++i) {
            const VcpuRecord &vb = b.vcpus[i], &va = after.vcpus[i];
            const uint64_t k = (uint64_t(vb.dom) << 32) | vb.id;
            const std::string n = "d" + std::to_string(vb.dom) + "v" + std::to_string(vb.id);
            auto name = [&n](const char* f) { return [&n, f] { return n + " " + f; }; };
            auto kb = lookup(bases_, k, std::pair{vb.table, vb.has_table});
            auto ku = lookup(user_bases_, k, std::pair{vb.user_table, vb.has_user_table});
            check(name("base"), vb.table, kb.first, va.table, hex);
            check(name("has base"), vb.has_table, kb.second, va.has_table, dec);
            check(name("user base"), vb.user_table, ku.first, va.user_table, hex);
            check(name("has user base"), vb.has_user_table, ku.second, va.has_user_table, dec);
            check(name("online"), vb.online, vb.online, va.online, dec);
        }
        // Platform record.
        check([] { return std::string("base loads"); }, b.base_loads, b.base_loads + base_loads_,
              after.base_loads, dec);
        std::vector<sim::DirectPlatform::Flush> expected = b.flushes;
        expected.insert(expected.end(), flushes_.begin(), flushes_.end());
        for (size_t i = 0; i < std::max(expected.size(), after.flushes.size()); ++i) {
            const bool has_e = i < expected.size(), has_a = i < after.flushes.size();
            if (has_e && has_a && same(expected[i], after.flushes[i])) continue;
            std::ostringstream s;
            s << "flush #" << i << ": expected " << (has_e ? describe_flush(expected[i]) : "none")
              << ", recorded " << (has_a ? describe_flush(after.flushes[i]) : "none");
            out.push_back(s.str());
        }
        return out;
    }

private:
    static uint64_t key(const Vcpu& v) { return (uint64_t(v.domain->id) << 32) | v.id; }
    template <class M, class V>
    static V lookup(const M& map, uint64_t k, V dflt)
    {
        auto it = map.find(k);
        return it == map.end() ? dflt : V(it->second);
    }
    static bool same(const sim::DirectPlatform::Flush& a, const sim::DirectPlatform::Flush& b)
    {
        return a.cpus == b.cpus && a.req.kind == b.req.kind &&
               (a.req.kind == FlushKind::All || a.req.va == b.req.va);
    }

    const Snapshot& before_;
    std::map<uint64_t, uint64_t> words_, type_infos_, m2p_;
    std::map<uint64_t, uint32_t> counts_;
    std::map<uint64_t, std::pair<uint64_t, bool>> bases_, user_bases_;
    std::vector<sim::DirectPlatform::Flush> flushes_;
    unsigned base_loads_ = 0;
};

// The machine now is the before snapshot plus exactly `expected`.
inline ::testing::AssertionResult only(const Changes& expected, sim::DirectMachine& m)
{
    const std::vector<std::string> diff = expected.mismatches(Snapshot(m));
    if (diff.empty()) return ::testing::AssertionSuccess();
    ::testing::AssertionResult r = ::testing::AssertionFailure();
    r << diff.size() << " unexpected difference(s):";
    for (const std::string& line : diff) r << "\n  " << line;
    return r;
}

// Nothing changed at all: memory, frame table, m2p, vCPUs, flushes.
inline ::testing::AssertionResult unchanged(const Snapshot& before, sim::DirectMachine& m)
{
    return only(Changes(before), m);
}

} // namespace pvmmu::test
