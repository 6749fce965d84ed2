// Hypercall arguments drawn from the fuzzer's input (fuzz/harness.h): the
// pickers. They draw every argument from the input, biased toward what reaches
// deep states — the domains' own tables and frames, the entries that map them,
// the flags guests really use, frames picked a moment ago (so "write it, pin
// it, link it, unlink it" chains form) — while still reaching every other
// value: foreign, hypervisor, I/O, free and nonexistent frames, reserved slots,
// bad pointers, huge counts, unknown commands. Arguments that are arrays live
// in guest memory (the FuzzPlatform's buffer); every pointer the decoder builds
// points into it, at its end, or nowhere. fuzz/make_seeds.py mirrors the byte
// encodings, so keep the two in step.
#pragma once

#include <pvmmu/abi.h>

#include "core/domain_builder.h"
#include "core/grant_table.h"
#include "core/hypercall.h"
#include "input.h"
#include "sim/arena.h"

namespace pvmmu::fuzz {

// The fuzz machine: the sim arena's hypervisor and I/O frames, two small
// domains, a few free frames; 16 KiB of guest memory for arguments.
inline constexpr DomId kIds[2] = {1, 2};
inline constexpr uint64_t kDomFrames[2] = {24, 16};
inline constexpr uint64_t kSpareFrames = 4;
inline constexpr uint64_t kFirstDomFrame = sim::Arena::kXenFrames + sim::Arena::kIoFrames;
inline constexpr uint64_t kMachineFrames = kFirstDomFrame + kDomFrames[0] + kDomFrames[1] + kSpareFrames;
inline constexpr size_t kGuestBytes = 16 * 1024;
inline constexpr uint64_t kBadPtr = 0x1000;   // never guest memory

class Decoder {
public:
    Decoder(Input& in, Hypervisor& hv, const DomainLayout* lays, unsigned nr_doms, uint8_t* guest);

    // Before each operation: who calls (domain index); argument memory is reused.
    void begin_op(unsigned caller)
    {
        caller_ = caller;
        bump_ = 0;
    }

    // The arguments of one hypercall (frame.op set), arrays in guest memory.
    HypercallFrame mmu_args(bool single);
    HypercallFrame ext_args(bool single);
    HypercallFrame uva_args();
    HypercallFrame xv_args();
    HypercallFrame raw_args();
    // The event, timer and scheduling hypercalls (core/event_ops.h): small
    // ports, vCPUs and VIRQs, the domains' ids, deadlines near the fuzz
    // platform's clock; raw_args takes these for their numbers.
    HypercallFrame event_args(uint64_t op);
    HypercallFrame multicall_args(unsigned depth);   // entries of any kind, nested up to 2 deep
    // grant_table_op (decoder_grant.cc); raw_args takes it for its number.
    HypercallFrame gnttab_args();

    // The caller's own writes to a frame it may write (how it builds tables).
    void guest_write();
    void guest_copy();

    // Frames the guest prepared as Linux does for the FIFO event ABI (a
    // control block cleared, an event array page of masked events) before
    // naming them to init_control or expand_array, and has not written since
    // (guest_write, guest_copy): only then do the event invariants' FIFO
    // queue rules apply to a domain (harness.cc).
    enum class Prepared : uint8_t { No, Block, Array };
    Prepared fifo_prepared(Mfn m) const { return m.v < kMachineFrames ? prepared_[m.v] : Prepared::No; }
    // m may have been written by the guest (a FIFO frame no longer kept).
    void written(Mfn m)
    {
        if (m.v < kMachineFrames) prepared_[m.v] = Prepared::No;
    }

    // A guest pointer as a hypercall argument (null: an unmapped address).
    uint64_t addr(const void* p) const { return p ? uint64_t(reinterpret_cast<uintptr_t>(p)) : kBadPtr; }

private:
    unsigned me() const { return caller_; }
    unsigned other() const { return nr_doms_ == 2 ? 1 - caller_ : caller_; }
    const DomainLayout& lay(unsigned i) const { return lays_[i]; }

    // Guest memory for arguments, and pointers to it (or not).
    template <class T>
    T* alloc(size_t n);
    uint64_t ptr_arg(const void* good);

    // One choice each.
    Mfn remember(Mfn m);
    Mfn frame();
    Mfn table_frame();
    unsigned index();
    uint64_t flags();
    uint64_t flag_range_val();
    uint64_t val(unsigned cmd);
    uint64_t ptr(unsigned cmd);
    uint64_t va();
    uint64_t vcpumask_arg();
    uint64_t foreigndom();
    uint64_t pdone_arg(uint32_t preset);
    uint32_t count_arg(uint32_t n);
    uint32_t small();
    uint16_t domid();
    void fifo_frames(uint32_t cmd, uint32_t* words);
    void prepare(Mfn m, uint32_t offset, bool array, event_word_t fill);
    bool fifo_uses(Mfn m) const;
    void ext_op(mmuext_op_t& o);
    bool guest_writable(Mfn m);
    // Grant tables (decoder_grant.cc): a reference, a host address, one side
    // of a copy; whether m is one of the caller's grant table frames, and
    // the caller's write to an entry of one.
    grant_ref_t gref();
    uint64_t grant_host_addr(uint32_t map_flags);
    void copy_ptr(gnttab_copy_t::gnttab_copy_ptr& p, bool by_gref);
    bool grant_frame(Mfn m) const;
    void grant_write(Mfn m);
    // Two reads in one expression would be unsequenced: these keep the order.
    uint64_t with_flags(Mfn m) { return Pte::make(m, flags()).v; }
    uint64_t entry_maddr(Mfn m) { return maddr_of(m).v + index() * sizeof(uint64_t); }

    Input& in_;
    Hypervisor& hv_;
    const DomainLayout* lays_;
    unsigned nr_doms_;
    uint8_t* guest_;
    size_t bump_ = 0;
    unsigned caller_ = 0;
    Mfn recent_[4];
    unsigned recent_next_ = 0;
    Prepared prepared_[kMachineFrames] = {};
};

} // namespace pvmmu::fuzz
