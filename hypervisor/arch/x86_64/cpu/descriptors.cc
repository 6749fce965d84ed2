// The hypervisor's GDT page and the shared IDT; see cpu/descriptors.h.
#include "cpu/descriptors.h"

#include "cpu/exceptions.h"
#include "cpu/traps.h"

namespace pvmmu::x86 {

namespace {

IdtGate g_idt[256];

// Index of a selector's descriptor within the hypervisor's GDT page.
constexpr unsigned slot(unsigned sel) { return ((sel & ~7u) - HV_GDT_RESERVED_OFFSET) / 8; }

} // namespace

void fill_hv_gdt_page(uint64_t* page, const Tss* tss)
{
    page[slot(HV_SEL_CS)] = seg_desc(Seg::Code64, 0);
    page[slot(HV_SEL_DS)] = seg_desc(Seg::Data, 0);
    // Xen's FLAT_RING3_CS32: ring-3 compatibility mode, which a guest may
    // enter through its own descriptors too (pv/descriptors.cc); SYSCALL from it
    // comes in at CSTAR's entry (pv/syscall_entry.S, docs/security.md).
    page[slot(HV_SEL_GUEST_CS32)] = seg_desc(Seg::Code32, 3);
    page[slot(HV_SEL_GUEST_DS)] = seg_desc(Seg::Data, 3);
    page[slot(HV_SEL_GUEST_CS64)] = seg_desc(Seg::Code64, 3);
    page[slot(HV_SEL_CS32)] = seg_desc(Seg::Code32, 0);
    const SysDesc t = tss_desc(reinterpret_cast<uint64_t>(tss), sizeof(Tss) - 1);
    page[slot(HV_SEL_TSS)] = t.lo;
    page[slot(HV_SEL_TSS) + 1] = t.hi;
}

void idt_init()
{
    for (unsigned v = 0; v < kNrExceptions; ++v) {
        unsigned ist = 0;
        if (v == kExcDF) ist = kIstDoubleFault;    // #DF: the stack may be what broke
        if (v == kExcNMI) ist = kIstNmi;           // NMI: may arrive anywhere
        if (v == kExcMC) ist = kIstMachineCheck;   // #MC: likewise
        if (v == kExcDB) ist = kIstDebug;          // #DB: may come on a guest's stack (cpu/traps.cc)
        // INT3 and INT 4 from the guest reach its #BP and #OF handlers
        // (cpu/trap_entry.S sees ring 3 in the frame, guest_bounce delivers).
        const unsigned dpl = v == kExcBP || v == kExcOF ? 3 : 0;
        g_idt[v] = interrupt_gate(trap_stubs[v], ist, dpl);
    }
    g_idt[kVectorShootdown] = interrupt_gate(trap_stubs[kNrExceptions], 0);
    g_idt[kVectorKick] = interrupt_gate(trap_stubs[kNrExceptions + 1], 0);
    g_idt[kVectorTimer] = interrupt_gate(trap_stubs[kNrExceptions + 2], 0);
    g_idt[kVectorSpurious] = interrupt_gate(trap_stubs[kNrExceptions + 3], 0);
}

void idt_load()
{
    const DescriptorPointer p{sizeof(g_idt) - 1, reinterpret_cast<uint64_t>(g_idt)};
    asm volatile("lidt %0" : : "m"(p));
}

} // namespace pvmmu::x86
