// The two narrow interfaces the guest library runs on (docs/design.md §6), so the same
// library and the same test programs run on the simulated machine and on bare
// metal:
//   Transport — issue a hypercall; an interrupt point for spin loops.
//   Memory    — 64-bit load / store / cmpxchg, an instruction fetch, and a cache
//               clean, at a guest virtual address.
// On the sim both are one GuestContext (guest/platform/sim); on bare metal the
// transport is the hypercall page and memory is plain loads and stores.
// Also here: what a page fault tells the guest, and the start-of-day facts the
// domain builder hands over (Xen's start_info, reduced to what pvmmu needs).
#pragma once

#include "guest/types.h"

namespace pvmmu::guest {

class Transport {
public:
    // Hypercall `op` with up to five arguments; the return value is the
    // hypercall's (0 or a negative Xen errno, or op-specific). Argument arrays
    // must live in guest memory (the hypervisor copies them from guest VAs).
    virtual long hypercall(unsigned op, uint64_t a0 = 0, uint64_t a1 = 0, uint64_t a2 = 0,
                           uint64_t a3 = 0, uint64_t a4 = 0) = 0;
    // An interrupt point: every spin loop in guest code calls it, so TLB
    // shootdowns sent to this vCPU are served while it waits (sim), or it pauses
    // (bare metal, where the IPI arrives by itself).
    virtual void relax() = 0;

protected:
    ~Transport() = default;
};

class Memory {
public:
    // false: the access faulted and the fault handler gave up (nothing accessed).
    [[nodiscard]] virtual bool load(Va va, uint64_t& out) = 0;
    [[nodiscard]] virtual bool store(Va va, uint64_t val) = 0;
    // n stores of words[i] at va + 8 i, as n store()s would make them (a
    // platform could do them in one go). false: a store faulted (the ones
    // before it were made).
    [[nodiscard]] virtual bool store_words(Va va, const uint64_t* words, unsigned n)
    {
        for (unsigned i = 0; i < n; ++i)
            if (!store(va + i * sizeof(uint64_t), words[i])) return false;
        return true;
    }
    // [va, va + bytes) as a pointer the library may store to itself, for its
    // own memory that cannot fault and whose mapping it does not change while
    // it uses the pointer (its scratch pages): on bare metal guest memory is
    // the program's own address space. nullptr: reach it through this
    // interface only.
    virtual uint64_t* direct(Va, uint64_t /*bytes*/) { return nullptr; }
    // Atomic compare-exchange; `expected` receives the value seen.
    [[nodiscard]] virtual bool cmpxchg(Va va, uint64_t& expected, uint64_t desired, bool& swapped) = 0;
    // An instruction fetch at va (NX checks).
    [[nodiscard]] virtual bool fetch(Va va) = 0;
    // Make the page-table entry at va (a physmap address) visible to walkers that
    // are not coherent with the data cache (docs/design.md §5 platform property).
    virtual void clean(Va va) = 0;

protected:
    ~Memory() = default;
};

enum class Access : uint8_t { Read, Write, Exec };

// What a page fault reports (x86: CR2 and the error code's P, W/R and I/D bits).
struct FaultInfo {
    Va va{0};
    Access access = Access::Read;
    bool present = false;   // a protection violation; else the entry was not present
};

// Start-of-day facts: the domain's memory, its initial page tables, and the
// platform properties the library's policies depend on.
struct BootInfo {
    Va physmap{0};               // gpfn g is mapped at physmap + g * 4 KiB: every gpfn on
                                 // pvmmu, the boot region on Xen (Guest::init maps the rest)
    Mfn first_mfn{0};            // frames [first_mfn, first_mfn + nr_frames), when p2m is nullptr
    // Xen's P2M list (start_info.mfn_list), gpfn -> mfn, and the read-only M2P
    // (mfn -> gpfn, m2p_entries long) to invert it: plain memory the library
    // reads directly, so bare metal only. nullptr where the frames are one
    // contiguous run (the sim; pvmmu's builder, whose list Guest::init finds
    // contiguous): first_mfn + gpfn then.
    const uint64_t* p2m = nullptr;
    const uint64_t* m2p = nullptr;
    uint64_t m2p_entries = 0;
    uint64_t nr_frames = 0;
    Gpfn l4{0};                  // the builder's L4, which every vCPU starts on
    uint64_t first_pt = 0;       // the builder's tables are gpfns [first_pt, first_pt + nr_pt_frames)
    uint64_t nr_pt_frames = 0;
    uint64_t first_free = 0;     // the frame allocator starts here or after the tables,
                                 // whichever is higher; on bare metal the kernel image and
                                 // boot structures lie below
    unsigned nr_vcpus = 1;
    bool tlb_caches_invalid = false;   // a failed walk may be cached (read faults flush)
    bool coherent_walker = true;       // false: PTE writes need a clean
};

} // namespace pvmmu::guest
