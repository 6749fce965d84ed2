// Segment descriptors, the 64-bit TSS and IDT gates (SDM Vol. 3A "Segment
// Descriptors", "Task Management in 64-bit Mode", "IDT Descriptors" in
// "Interrupt and Exception Handling"), encoded by constexpr functions whose
// results are asserted against the well-known values.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <pvmmu/abi.h>

#include "cpu/selectors.h"

namespace pvmmu::x86 {

// The selectors are Xen's ABI (cpu/selectors.h): check them against its headers.
static_assert(HV_SEL_GUEST_CS32 == FLAT_RING3_CS32);
static_assert(HV_SEL_GUEST_CS64 == FLAT_RING3_CS64);
static_assert(HV_SEL_GUEST_DS == FLAT_RING3_DS32 && HV_SEL_GUEST_DS == FLAT_RING3_SS64);
static_assert(HV_GDT_RESERVED_OFFSET == FIRST_RESERVED_GDT_BYTE);
// SYSCALL loads CS = STAR[47:32] and SS = that + 8; 64-bit SYSRET loads
// CS = STAR[63:48] + 16 and SS = STAR[63:48] + 8, both with RPL 3 ("SYSCALL",
// "SYSRET" in Vol. 2B). The order of the entries is what makes both work.
static_assert(HV_SEL_DS == HV_SEL_CS + 8);
static_assert(HV_SEL_GUEST_CS64 == (((HV_SEL_GUEST_CS32 & ~3) + 16) | 3));
static_assert(HV_SEL_GUEST_DS == (((HV_SEL_GUEST_CS32 & ~3) + 8) | 3));

// A code or data descriptor with base 0 and limit 4 GiB (ignored in 64-bit
// mode but kept flat for compatibility mode). The accessed bit is preset: the
// CPU would otherwise write it on the first load, which faults when the GDT
// page is mapped read-only.
enum class Seg : uint8_t { Code64, Code32, Data };
constexpr uint64_t seg_desc(Seg kind, unsigned dpl)
{
    constexpr uint64_t kAccessed = 1ull << 40, kReadWrite = 1ull << 41, kCode = 1ull << 43;
    constexpr uint64_t kS = 1ull << 44, kP = 1ull << 47;
    constexpr uint64_t kLong = 1ull << 53, kDb = 1ull << 54, kGran = 1ull << 55;
    constexpr uint64_t kLimit = 0xffffull | (0xfull << 48);
    uint64_t d = kLimit | kAccessed | kReadWrite | kS | kP | kGran | (uint64_t(dpl & 3) << 45);
    if (kind != Seg::Data) d |= kCode;
    d |= kind == Seg::Code64 ? kLong : kDb;   // L=1 requires D=0
    return d;
}
static_assert(seg_desc(Seg::Code64, 0) == 0x00af9b000000ffffull);
static_assert(seg_desc(Seg::Data, 0) == 0x00cf93000000ffffull);
static_assert(seg_desc(Seg::Code32, 3) == 0x00cffb000000ffffull);
static_assert(seg_desc(Seg::Code64, 3) == 0x00affb000000ffffull);

// The 64-bit TSS ("64-Bit TSS Format"): stacks for privilege changes and the
// interrupt stack table. No I/O bitmap: iomap_base past the limit denies every
// port to ring 3.
struct __attribute__((packed)) Tss {
    uint32_t reserved0;
    uint64_t rsp[3];
    uint64_t reserved1;
    uint64_t ist[7];   // IST1..IST7
    uint64_t reserved2;
    uint16_t reserved3;
    uint16_t iomap_base;
};
static_assert(sizeof(Tss) == 104);
static_assert(offsetof(Tss, rsp) == 4 && offsetof(Tss, ist) == 0x24 && offsetof(Tss, iomap_base) == 0x66);

// IST slots (1-based, as the gate's IST field): exceptions that must not run
// on a stack that may be the broken one.
inline constexpr unsigned kIstDoubleFault = 1, kIstNmi = 2, kIstMachineCheck = 3, kIstDebug = 4;

// A 16-byte system descriptor ("Segment Descriptor Tables" in 64-bit mode):
// present, DPL 0, byte granular, of the given type: 9 an available 64-bit
// TSS, 2 an LDT ("System-Segment and Gate-Descriptor Types").
struct SysDesc {
    uint64_t lo, hi;
};
constexpr SysDesc sys_desc(unsigned type, uint64_t base, uint32_t limit)
{
    const uint64_t lo = (limit & 0xffffull) | ((base & 0xffffffull) << 16) | (uint64_t(type & 0xf) << 40) |
                        (1ull << 47) | ((uint64_t(limit) >> 16 & 0xf) << 48) |
                        ((base >> 24 & 0xff) << 56);
    return SysDesc{lo, base >> 32};
}
constexpr SysDesc tss_desc(uint64_t base, uint32_t limit) { return sys_desc(0x9, base, limit); }
constexpr SysDesc ldt_desc(uint64_t base, uint32_t limit) { return sys_desc(0x2, base, limit); }
static_assert(ldt_desc(0xffff808000030000ull, 0xffff).lo == 0x000082030000ffffull);
static_assert(tss_desc(0xffff808000001000ull, 103).lo == 0x0000890010000067ull);
static_assert(tss_desc(0xffff808000001000ull, 103).hi == 0xffff8080ull);

// A 64-bit interrupt gate ("64-Bit IDT Gate Descriptors"): type 0xE clears IF
// on entry. With DPL 0 ring 3 cannot raise it with INT n (a #GP instead);
// with DPL 3 it can (INT3 and INT n of #BP and #OF, as Xen's PV ABI has them).
struct IdtGate {
    uint16_t offset_lo;
    uint16_t selector;
    uint8_t ist;
    uint8_t type_attr;
    uint16_t offset_mid;
    uint32_t offset_hi;
    uint32_t reserved;
};
static_assert(sizeof(IdtGate) == 16);
constexpr IdtGate interrupt_gate(uint64_t handler, unsigned ist, unsigned dpl = 0)
{
    return IdtGate{uint16_t(handler), HV_SEL_CS, uint8_t(ist & 7), uint8_t(0x8e | (dpl & 3) << 5),
                   uint16_t(handler >> 16), uint32_t(handler >> 32), 0};
}
static_assert(interrupt_gate(0, 0, 3).type_attr == 0xee);

struct __attribute__((packed)) DescriptorPointer {
    uint16_t limit;
    uint64_t base;
};
static_assert(sizeof(DescriptorPointer) == 10);

// Fills the hypervisor's GDT page (the entries from HV_GDT_RESERVED_OFFSET on)
// for a CPU whose TSS is at `tss`.
void fill_hv_gdt_page(uint64_t* page, const Tss* tss);

// The IDT, one for every CPU: exception vectors 0-31 and the platform's
// interrupt vectors. idt_init fills it once; idt_load loads it on this CPU.
void idt_init();
void idt_load();

} // namespace pvmmu::x86
