// The fuzz harness over grant tables (fuzz/decoder_grant.cc): pseudo-random
// programs of grant_table_op calls and grant entries offered and revoked by
// the two domains keep every invariant (the grant mappings' references, the
// pins and the granters' flags among them), and every one-request map, unmap
// or copy refused by its status leaves the machine as it found it.
#include <gtest/gtest.h>

#include <pvmmu/abi.h>

#include <random>
#include <vector>

#include "fuzz/decoder.h"
#include "fuzz/harness.h"

namespace pvmmu::test {
namespace {

using fuzz::Options;
using fuzz::Outcome;

// Two domains (the config byte), then 80 operations: a grant entry of the
// caller's table offered to the other domain or revoked (GuestWrite on the
// table's frame, its last), or a grant_table_op (RawCall with number 20),
// their bytes laid out as fuzz/decoder.cc and decoder_grant.cc read them.
class GrantInput {
public:
    explicit GrantInput(uint32_t seed) : rng_(seed)
    {
        b_.push_back(4);
        for (unsigned i = 0; i < 80; ++i) {
            if (rng_() % 3 == 0) offer();
            else call();
        }
    }
    const std::vector<uint8_t>& bytes() const { return b_; }

private:
    void u8(unsigned v) { b_.push_back(uint8_t(v)); }
    unsigned frames() const { return unsigned(fuzz::kDomFrames[dom_]); }
    void pick(unsigned i) { u8(1), u8(i); }          // `x % 8 ? table[next] : ...` choosing table[i]
    void other_domid() { u8(1 + (1 - dom_)); }      // Decoder::domid(): the other domain's id
    void own_frame() { u8(0), u8(rng_() % frames()); }
    void gref() { u8(1), u8(rng_() % 8); }
    void host(bool pte) { u8(rng_() % frames()), u8(pte ? 2 : 3); }

    void offer()
    {
        dom_ = rng_() & 1;
        u8(7 | dom_ << 7);             // GuestWrite
        u8(0), u8(frames() - 1);       // the grant table's frame
        u8(1), u8(rng_() % 8);         // its entry
        if (rng_() % 5 == 0) {
            u8(0);                     // revoked
            return;
        }
        u8(1);
        pick(rng_() % 3);              // permit_access, or read-only
        other_domid();
        own_frame();
    }

    void call()
    {
        dom_ = rng_() & 1;
        u8(9 | dom_ << 7);             // RawCall
        u8(1), u8(__HYPERVISOR_grant_table_op);
        // kHotGntCmds: 0-1 map, 2-3 unmap, 4-5 copy, 6 unmap_and_replace, 7 setup, 8-13 the rest.
        const unsigned c = rng_() % 14;
        pick(c);
        u8(1);                         // one request
        switch (c) {
        case 0:
        case 1: {
            const unsigned fl = rng_() % 5;   // kMapFlags: host_map, readonly, contains_pte (+ ro), avail bits
            pick(fl);
            host(fl == 2 || fl == 3);
            gref();
            other_domid();
            break;
        }
        case 2:
        case 3:
        case 6: {
            const bool pte = rng_() & 1;
            u8(pte);
            host(pte);
            u8(1), u8(rng_() % 9);   // the handle
            if (c == 6) host(false);
            break;
        }
        case 4:
        case 5: {
            const unsigned fl = 1 + rng_() % 3;   // a grant on one side at least
            pick(fl);
            for (unsigned side = 0; side < 2; ++side) {
                if (fl & (1u << side)) {
                    gref();
                    other_domid();
                } else {
                    own_frame();
                    u8(1);                 // DOMID_SELF
                }
                u8(1), u8(rng_() % 3);     // offset 0, 2040 or 4080
            }
            u8(1), u8(rng_() % 64);        // length, 17 bytes a step
            break;
        }
        case 7:
            u8(0);                         // DOMID_SELF
            u8(1), u8(rng_() % 3);         // nr_frames
            u8(4);                         // a good frame list
            break;
        default:
            for (unsigned k = 0; k < 16; ++k) u8(2), u8(rng_() % 4);
            u8(rng_() % 4);
            break;
        }
        u8(1);                             // the count as built
        u8(4);                             // a good pointer
    }

    std::mt19937 rng_;
    std::vector<uint8_t> b_;
    unsigned dom_ = 0;
};

TEST(FuzzGrants, RandomGrantProgramsKeepEveryInvariantAndRefuseWithoutSideEffects)
{
    uint64_t mapped = 0, refused = 0, calls = 0;
    for (uint32_t seed = 0; seed < 200; ++seed) {
        const GrantInput in(seed);
        const Outcome o = fuzz::run_input(in.bytes().data(), in.bytes().size(), Options{});
        ASSERT_TRUE(o.ok) << "seed " << seed << ": " << o.failure;
        mapped += o.grants_mapped;
        refused += o.grants_refused;
        calls += o.calls;
    }
    // The programs reach live mappings and refusals, not only early errors.
    EXPECT_GT(mapped, 50u);
    EXPECT_GT(refused, 1000u);
    EXPECT_GT(calls, 8'000u);
}

} // namespace
} // namespace pvmmu::test
