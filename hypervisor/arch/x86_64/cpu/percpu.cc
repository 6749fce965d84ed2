// Per-CPU areas and loading a CPU's descriptors; see cpu/percpu.h.
#include "cpu/percpu.h"

#include "boot/boot_alloc.h"
#include "cpu/cpu_bits.h"
#include "cpu/cpu_features.h"
#include "cpu/x86.h"
#include "mm/direct_map.h"
#include "mm/paging.h"
#include "pv/domain.h"
#include "pv/run.h"

extern "C" void load_gdt_and_segments(const pvmmu::x86::DescriptorPointer* p);

namespace pvmmu::x86 {

extern "C" {
constinit PerCpu g_cpus[kMaxCpus];   // a definition: the braces make it one
}
unsigned g_nr_cpus = 1;
CpuLdt g_cpu_ldt[kMaxCpus];

void percpu_early_bsp()
{
    g_cpus[0].self = &g_cpus[0];
    wrmsr(MSR_GS_BASE, reinterpret_cast<uint64_t>(&g_cpus[0]));
}

void percpu_area_build(uint32_t id, uint32_t apic_id)
{
    PerCpu& c = g_cpus[id];
    c.self = &c;
    c.id = id;
    c.apic_id = apic_id;
    c.area = HV_PERCPU_VIRT + uint64_t(id) * HV_PERCPU_STRIDE;

    // Both GDT windows: the guest's buffer read-only (its descriptors come
    // with the accessed bit set, so the CPU never writes them), then the
    // hypervisor's page.
    const Maddr gdt = boot_alloc_frame();
    fill_hv_gdt_page(dmap<uint64_t>(gdt), &c.tss);
    for (unsigned w = 0; w < 2; ++w) {
        const uint64_t window = c.area + area::kGdtWindow[w];
        c.gdt_buf[w] = boot_alloc(area::kGdtPage * kPageSize).v;
        for (uint64_t p = 0; p < area::kGdtPage; ++p)
            map_page(Vaddr{window + p * kPageSize}, Maddr{c.gdt_buf[w] + p * kPageSize}, hv_pte::kRodata);
        map_page(Vaddr{window + area::kGdtPage * kPageSize}, gdt, hv_pte::kData);
    }

    // Both LDT windows, read-only like the GDT's (the accessed bit preset).
    for (unsigned w = 0; w < 2; ++w) {
        const uint64_t window = c.area + area::kLdtWindow[w];
        g_cpu_ldt[id].buf[w] = boot_alloc(area::kLdtPages * kPageSize).v;
        for (uint64_t p = 0; p < area::kLdtPages; ++p)
            map_page(Vaddr{window + p * kPageSize}, Maddr{g_cpu_ldt[id].buf[w] + p * kPageSize}, hv_pte::kRodata);
    }

    const Maddr stack = boot_alloc(area::kStackSize);
    for (uint64_t off = 0; off < area::kStackSize; off += kPageSize)
        map_page(Vaddr{c.area + area::kStack + off}, Maddr{stack.v + off}, hv_pte::kData);
    c.stack_top = c.area + area::kStack + area::kStackSize;

    for (unsigned i = 0; i < sizeof(area::kIst) / sizeof(area::kIst[0]); ++i) {
        map_page(Vaddr{c.area + area::kIst[i]}, boot_alloc_frame(), hv_pte::kData);
        c.tss.ist[i] = c.area + area::kIst[i] + kPageSize;
    }
    // The stack ring 3 enters on (guests); the I/O bitmap past the limit.
    c.tss.rsp[0] = c.stack_top;
    c.tss.iomap_base = sizeof(Tss);
}

void percpu_load(PerCpu& c)
{
    const DescriptorPointer gdt{HV_GDT_LIMIT, c.area + area::kGdtWindow[c.gdt_active]};
    load_gdt_and_segments(&gdt);
    // A null LDT: after reset or INIT, LDTR has base 0 and limit 0xffff
    // ("Processor State Following Power-up, Reset, or INIT", SDM Vol. 3A), so
    // a selector with TI = 1 would read its descriptor from linear address
    // 0-0xffff, guest memory under a guest's CR3: a call gate to ring 0 put
    // there by the guest. Null, every such selector is #GP (found by the
    // hostile guest, docs/security.md §7.10; test qemu_guest_gdt).
    asm volatile("lldt %w0" : : "r"(uint16_t(0)));
    asm volatile("ltr %w0" : : "r"(uint16_t(HV_SEL_TSS)));
    idt_load();
    wrmsr(MSR_GS_BASE, reinterpret_cast<uint64_t>(&c));
    cpu_features_enable();
    syscall_init();
}

} // namespace pvmmu::x86
