// An address space of the guest: one L4 slot's worth of virtual memory (512 GiB)
// with its own L3/L2/L1 tree, linked into the domain's L4 next to the physmap.
// It holds VMAs of demand-zero anonymous memory, changes their protection with
// mprotect (batched per L1, docs/design.md §6) and handles their page faults: demand-zero
// pages, and spurious faults fixed locally (seed 004).
//
// Locking: the tree lock covers the VMAs and the tree's shape (mmap_sem's job);
// each L1's entries are written under its split lock (Guest::pte_lock). A fault
// takes both, so it waits out any mprotect or PTE operation in progress and
// then sees the finished entry.
#pragma once

#include "guest/guest.h"
#include "guest/pte.h"

namespace pvmmu::guest {

struct Vma {
    Va start{0}, end{0};   // [start, end), page aligned
    unsigned prot = kProtNone;
};

class AddressSpace {
public:
    static constexpr unsigned kMaxVmas = 64;

    // Builds the root (an L3) for L4 slot `slot` — not the physmap's, not the
    // hypervisor's — pins it, links it into the domain's L4 and registers the
    // space for page faults.
    [[nodiscard]] int create(Cpu& c, unsigned slot);
    // Unlinks and unpins the tree, flushes the vCPUs that held it, and gives
    // every table and page back to the allocator.
    [[nodiscard]] int destroy(Cpu& c);

    Va base() const { return Va{uint64_t(slot_) << 39}; }
    uint64_t size() const { return level_span(Level::L4); }
    bool contains(Va va) const { return va.v - base().v < size(); }

    // Anonymous memory at [start, start + len): no page until it is touched.
    [[nodiscard]] int map_anon(Cpu& c, Va start, uint64_t len, unsigned prot);

    // POSIX mprotect: 0, -EINVAL (unaligned, bad prot), -ENOMEM (a hole in the
    // range or no room for VMAs), or the hypercall's error.
    [[nodiscard]] int mprotect(Cpu& c, Va start, uint64_t len, unsigned prot);

    // The vCPUs that may hold translations of this space (Linux's mm_cpumask):
    // a vCPU enters before it touches the space and is flushed by every
    // reduction until it leaves (which flushes it locally).
    void enter(Cpu& c);
    [[nodiscard]] int leave(Cpu& c);
    uint64_t vcpus() const { return vcpus_.load(std::memory_order_acquire); }

    // The page-fault handler for addresses in this space: true to retry.
    bool handle_fault(Cpu& c, const FaultInfo& f);

    // The L1 entry that maps va; false while no L1 covers it.
    [[nodiscard]] bool pte_of(Cpu& c, Va va, PteRef& out);
    // The VMA protection at va; false if no VMA covers it.
    [[nodiscard]] bool prot_at(Va va, unsigned& prot) const;
    // The root of the tree (an L3), for tests that walk it.
    Gpfn root() const { return root_; }

private:
    int find_vma(Va va) const;
    [[nodiscard]] bool covered(Va start, Va end) const;
    [[nodiscard]] int split_at(Va at);
    void merge();
    [[nodiscard]] int set_prot(Va start, Va end, unsigned prot);
    [[nodiscard]] int ensure_l1(Cpu& c, Va va, Gpfn& l1);
    [[nodiscard]] bool find_l1(Cpu& c, Va va, Gpfn& l1);
    [[nodiscard]] int fix_fault(Cpu& c, const FaultInfo& f, unsigned prot);

    unsigned slot_ = 0;
    Gpfn root_{0};
    bool live_ = false;
    SpinLock tree_;
    std::atomic<uint64_t> vcpus_{0};
    Vma vmas_[kMaxVmas];   // sorted by start, non-overlapping
    unsigned nr_vmas_ = 0;
};

} // namespace pvmmu::guest
