// The hypercall fuzzer's harness, separate from libFuzzer's entry
// point so the same code replays the corpus and the regressions as unit tests
// in every build (tests/invariants/fuzz_replay_test.cc).
//
// An input is a program: a configuration byte (bits 1:0 the preemption budget
// 4096/1/2/7, bit 2 a second domain, bit 3 two vCPUs for the first, bits 4 and
// 5 MapForeign for either), then up to kMaxOps operations, each a byte (bit 7:
// the second domain calls, bit 6: its last vCPU, bits 5:0: the operation) and
// the bytes decoder.h draws its arguments from: a hypercall (every command and
// argument, valid and not), a guest's own write to memory it may write (how a
// guest builds a page table), or a policy change. Bytes past the end read as 0.
// After every hypercall round the invariant checker runs; a refused
// single-request hypercall must leave the state as it found it (state.h).
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <string>

namespace pvmmu::fuzz {

inline constexpr unsigned kMaxOps = 64;

// Deliberate breakage, to show the harness catches what it looks for.
enum class Inject : uint8_t {
    None,
    BumpCountAfterFirstCall,    // the checker must fail
    WriteAfterRefusedRequest,   // the refused-request compare must fail
    DropSelectorsAfterEachCall, // every vCPU's evtchn_pending_sel (FIFO: READY) cleared: an event is lost
    SignalOtherDomain,          // a bit of the other domain's shared_info set: isolation broken
    SignalOtherDomainFifo,      // a bit of one of the other domain's FIFO event frames set: the same
};

struct Options {
    bool concurrent_ad = false;   // a thread sets A/D bits meanwhile (ad_walker.h)
    bool strict = false;          // no tolerance in the refused-request compare
    Inject inject = Inject::None;
    bool verbose = false;         // print every hypercall and its result (stderr)
};

struct Outcome {
    bool ok = true;
    std::string failure;          // what broke, and the last operations before it
    uint64_t ops = 0;             // operations decoded
    uint64_t calls = 0;           // hypercalls issued
    uint64_t rounds = 0;          // hypercall rounds (continuations included), each checked
    uint64_t refused_checked = 0; // refused single requests compared
    uint64_t ad_bits = 0;         // A/D bits the concurrent walker set
    uint64_t grants_mapped = 0;   // one-request grant maps that succeeded
    uint64_t grants_refused = 0;  // one-request grant calls refused by status, compared
};

Outcome run_input(const uint8_t* data, size_t size, const Options& opt);

} // namespace pvmmu::fuzz
