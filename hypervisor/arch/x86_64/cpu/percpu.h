// Per-CPU state, reached through %gs (IA32_GS_BASE holds this CPU's PerCpu,
// whose first word points to itself, so this_cpu() is one load), and the
// per-CPU virtual area each CPU gets in L4 slot 257:
//
//   +0x00000  GDT window 0, 16 pages: 0-13 the guest's entries (buffer 0,
//             read-only), 14 the hypervisor's descriptors, 15 unmapped
//   +0x10000  guard            +0x11000  stack, 16 KiB (also TSS.RSP0)
//   +0x15000  guard            +0x16000  IST1 #DF stack, 4 KiB
//   +0x17000  guard            +0x18000  IST2 NMI stack
//   +0x19000  guard            +0x1a000  IST3 #MC stack
//   +0x1b000  guard            +0x1c000  IST4 #DB stack
//   +0x1d000  unmapped
//   +0x20000  GDT window 1: as window 0, with buffer 1 (the same page 14)
//   +0x30000  LDT window 0, 16 pages (8192 entries), read-only
//   +0x40000  LDT window 1
//   +0x50000  unmapped up to the next CPU's area (HV_PERCPU_STRIDE)
//
// The guest's entries (set_gdt, pv/descriptors.cc) are validated copies in
// hypervisor frames: set_gdt fills the buffer not in use and loads GDTR with
// its window, so a call that fails leaves the GDT in use untouched. The
// guest's LDT (MMUEXT_SET_LDT) is kept the same way in the LDT windows, and
// the hypervisor's GDT page holds the LDT descriptor (HV_SEL_LDT) of the one
// in use.
//
// Every stack has an unmapped page below it, so an overflow faults instead of
// corrupting the next one; #DF runs on its own stack and reports it.
#pragma once

#include <atomic>
#include <stdint.h>

#include "core/domain.h"
#include "cpu/descriptors.h"
#include "cpu/entry_defs.h"
#include "mm/layout.h"

namespace pvmmu::x86 {

namespace area {
inline constexpr uint64_t kGdtPage = FIRST_RESERVED_GDT_PAGE;   // page 14 of the window
inline constexpr uint64_t kStack = 0x11000, kStackSize = 0x4000;
inline constexpr uint64_t kIst[4] = {0x16000, 0x18000, 0x1a000, 0x1c000};   // IST1..IST4, 4 KiB each
inline constexpr uint64_t kGdtWindow[2] = {0x00000, 0x20000};
inline constexpr uint64_t kLdtWindow[2] = {0x30000, 0x40000};
inline constexpr uint64_t kLdtPages = 16;   // 8192 descriptors, the most an LDT has
inline constexpr uint64_t kEnd = 0x50000;
static_assert(kGdtPage * kPageSize == HV_GDT_RESERVED_OFFSET);
static_assert(kStack >= 16 * kPageSize + kPageSize);   // the GDT window, then a guard
static_assert(kGdtWindow[1] >= kIst[3] + 2 * kPageSize);   // after IST4 and a gap
static_assert(kLdtWindow[0] >= kGdtWindow[1] + 16 * kPageSize);
static_assert(kLdtWindow[1] == kLdtWindow[0] + kLdtPages * kPageSize && kEnd == kLdtWindow[1] + kLdtPages * kPageSize);
static_assert(kEnd <= HV_PERCPU_STRIDE);
static_assert(uint64_t(kMaxCpus + 1) * HV_PERCPU_STRIDE <= (1ull << 39));   // all in slot 257
} // namespace area

enum class CpuState : uint32_t { Absent, Starting, Online };

struct PerCpu {
    PerCpu* self = nullptr;       // %gs:0
    uint64_t stack_top = 0;       // %gs:PERCPU_STACK_TOP (syscall entry)
    uint64_t guest_rsp = 0;       // %gs:PERCPU_GUEST_RSP: syscall entry's scratch
    uint32_t id = 0;              // dense number, 0 = the boot CPU
    uint32_t apic_id = 0;
    uint64_t area = 0;            // virtual base of this CPU's area (= GDT window 0)
    // The running vCPU's own GDT entries (set_gdt): buffer b (machine
    // address) backs window b's pages 0-13 and holds gdt_ents[b] entries;
    // GDTR has window gdt_active.
    uint64_t gdt_buf[2] = {};
    uint32_t gdt_ents[2] = {};
    uint32_t gdt_active = 0;
    pvmmu::Vcpu* vcpu = nullptr;  // the guest vCPU pinned here, once it runs
    std::atomic<pvmmu::Vcpu*> next{nullptr};   // VCPUOP_up: a vCPU for this idle CPU to run
    std::atomic<CpuState> state{CpuState::Absent};
    // Inside a hypercall or a domain's teardown (cpu/quiesce.h).
    std::atomic<bool> in_section{false};
    // Control registers as the CPU saw them once online (the invariant check).
    uint64_t cr0 = 0, cr3 = 0, cr4 = 0, efer = 0;
    alignas(128) Tss tss{};       // 104 bytes in one 128-byte line: never straddles a page
    // The parts of the return-to-guest check not marked since the last one
    // (pv/events.h), 0: every part due, a vCPU's first return too. In the
    // line's tail after the TSS, read and written through %gs.
    uint8_t return_clear = 0;
};
static_assert(__builtin_offsetof(PerCpu, self) == 0);
static_assert(__builtin_offsetof(PerCpu, stack_top) == PERCPU_STACK_TOP);
static_assert(__builtin_offsetof(PerCpu, guest_rsp) == PERCPU_GUEST_RSP);

// C linkage: cpu/trap_entry.S compares IA32_GS_BASE with the element its stack's
// area belongs to.
extern "C" constinit PerCpu g_cpus[kMaxCpus];
static_assert(sizeof(PerCpu) == PERCPU_SIZE && kMaxCpus == PERCPU_MAX_CPUS);
static_assert((PERCPU_SIZE & (PERCPU_SIZE - 1)) == 0);   // cpu/trap_entry.S tests alignment with a mask
extern unsigned g_nr_cpus;   // CPUs found (ACPI MADT); ids [0, g_nr_cpus)

// The running vCPU's LDT (MMUEXT_SET_LDT, pv/descriptors.cc), kept beside PerCpu,
// which is full (PERCPU_SIZE): buffer b (machine address, kLdtPages frames)
// backs LDT window b and holds ents[b] entries; LDTR has window `active`, or
// is null while ents[active] is 0.
struct CpuLdt {
    uint64_t buf[2] = {};
    uint32_t ents[2] = {};
    uint32_t active = 0;
};
extern CpuLdt g_cpu_ldt[kMaxCpus];   // by CPU id

inline PerCpu& this_cpu()
{
    PerCpu* p;
    asm volatile("mov %%gs:0, %0" : "=r"(p));
    return *p;
}
inline uint32_t this_cpu_id() { return this_cpu().id; }
// The running vCPU (PerCpu::vcpu) in one load through %gs. Volatile asm
// without a memory clobber: kept in order with calls and other volatile asm,
// not with plain stores, so a writer of PerCpu::vcpu (pv/run.cc) must reach
// any inline reader only through a call or a volatile asm with a memory
// clobber (a CR3 write), as both writers do.
inline pvmmu::Vcpu* this_vcpu()
{
    pvmmu::Vcpu* v;
    asm volatile("mov %%gs:%c1, %0" : "=r"(v) : "i"(__builtin_offsetof(PerCpu, vcpu)));
    return v;
}

// Early: points %gs at g_cpus[0] so the console and the trap path can name
// the CPU before anything else exists.
void percpu_early_bsp();

// Allocates and maps CPU `id`'s area (GDT page, TSS in PerCpu, stacks).
void percpu_area_build(uint32_t id, uint32_t apic_id);

// On the CPU itself: loads its GDT window, reloads the segment registers,
// loads its TSS and the shared IDT, sets %gs and the SYSCALL MSRs.
void percpu_load(PerCpu& c);

} // namespace pvmmu::x86
