// set_gdt (hypercall 2, docs/abi.md §10): the guest's own GDT entries.
// A DPL-3 data and a 64-bit DPL-3 code descriptor are installed and used (a
// data selector in %ds/%es/%fs, a far return through the code selector);
// then DPL-0 code and data (their DPL raised to 3, in the frame too) and
// 32-bit code are taken, as Xen takes them, and every invalid request — a
// TSS, a call gate, an interrupt gate, an LDT descriptor,
// too many entries, a frame of the hypervisor or beyond memory, a page
// table, an unmapped list — gets its errno and changes nothing. pvmmu copies
// the descriptors, so the guest's later writes to its frame change nothing
// either: entry 1 is made not present in the frame first, and loading it must
// still work until a set_gdt succeeds. Loading a selector that is no longer
// valid raises #GP or #NP, bounced to the guest's handler. A selector of the
// LDT (TI = 1) is #GP too: the hypervisor loads a null LDTR on every CPU, so
// no descriptor is ever read from the reset LDT (base 0, limit 0xffff: guest
// memory, where a call gate to ring 0 could be put).
//
// With a second vCPU (`vcpus=2`, qemu_guest_gdt_smp): update_descriptor (hypercall 10) of
// the frame's entry 1 while vCPU 1, on its own CPU, has a GDT copied from
// the same frame and loads 0x0b in a loop: it sees the entry go not present
// (#NP) and present again, as vCPU 0 does, without a set_gdt of its own.
// Then vCPU 1 is initialised with the frame as its context's gdt_frames and
// loads 0x0b with no set_gdt at all; too many entries or a page table as the
// frame are -EINVAL.
#include "tiny_guest.h"

using namespace tiny;

// Hidden, as everything in the image: no GOT (xenpv.cmake).
#pragma GCC visibility push(hidden)
extern "C" {
// 0 when `sel` loads into %ds, else 0x10000 (#GP), 0x20000 (#NP) or
// 0x40000 (#PF) | the fault's error code (seg_gp / seg_np / seg_pf resume at
// load_done).
long load_ds(uint64_t sel);
// Far-returns to `sel`:here, reads %cs there and far-returns to FLAT_RING3_CS64.
uint64_t run_on_cs(uint64_t sel);
void seg_gp();
void seg_np();
void seg_pf();
}
#pragma GCC visibility pop

// The handlers get Xen's bounce frame (RCX, R11, error code, RIP, CS,
// RFLAGS, RSP, SS) and leave by the iret hypercall at load_done, with the
// error code's slot as iret's flags; RCX and R11 are caller-saved around
// load_ds, so they need not survive.
asm(R"(
	.text
	.globl load_ds, run_on_cs, seg_gp, seg_np, seg_pf
load_ds:
	xor %eax, %eax
	mov %di, %ds
load_done:
	ret
run_on_cs:
	push %rdi
	lea 1f(%rip), %rax
	push %rax
	lretq
1:	mov %cs, %eax
	pushq $0xe033
	lea 2f(%rip), %rcx
	push %rcx
	lretq
2:	ret
seg_gp:
	mov $0x10000, %eax
	jmp 3f
seg_np:
	mov $0x20000, %eax
	jmp 3f
seg_pf:
	mov $0x40000, %eax
3:	add $16, %rsp
	or (%rsp), %rax
	lea load_done(%rip), %rcx
	mov %rcx, 8(%rsp)
	movq $0, (%rsp)
	jmp hypercall_page + 23 * 32
)");

namespace {

// Descriptors ("Segment Descriptors", SDM Vol. 3A), flat, accessed bit clear.
constexpr uint64_t kP = 1ull << 47;
constexpr uint64_t kData3 = 0x00cff2000000ffff;    // data, read/write, DPL 3
constexpr uint64_t kCode3 = 0x00affa000000ffff;    // 64-bit code, DPL 3
constexpr uint64_t kCode0 = 0x00af9a000000ffff;    // 64-bit code, DPL 0
constexpr uint64_t kCode32 = 0x00cffa000000ffff;   // 32-bit code, DPL 3: compatibility mode
constexpr uint64_t kTss3 = 0x0000e90000000067;     // 64-bit TSS, DPL 3
constexpr uint64_t kGate3 = 0x0000ec0000000000;    // 64-bit call gate, DPL 3
constexpr uint64_t kIntr3 = 0x0000ee0000000000;    // 64-bit interrupt gate, DPL 3
constexpr uint64_t kLdt3 = 0x0000e20000000fff;     // LDT descriptor, DPL 3
constexpr uint64_t kDpl = 3ull << 45;
constexpr uint16_t kSelData = 0x0b, kSelCode = 0x13;   // entries 1 and 2, RPL 3
constexpr long kGp = 0x10000, kNp = 0x20000;

alignas(4096) uint64_t g_gdt[512];

long set_gdt(const xen_pfn_t* frames, unsigned entries)
{
    return hypercall(__HYPERVISOR_set_gdt, uint64_t(frames), entries);
}

uint16_t ds()
{
    uint16_t s;
    asm volatile("mov %%ds, %0" : "=r"(s));
    return s;
}

// vCPU 1's part of the update_descriptor check: it loads GDT entry 1 again
// and again and publishes what each load gave, until vCPU 0 says stop.
alignas(16) uint8_t g_stack1[16384];
const trap_info_t* g_traps;
xen_pfn_t g_frame1[1];
volatile long g_seen1 = -1;   // the last load_ds(0x0b) on vCPU 1; -1 before its GDT
volatile bool g_stop1 = false;

bool g_gdt_from_context = false;   // vCPU 1 has its GDT from VCPUOP_initialise: no set_gdt

[[noreturn]] void vcpu1_loads()
{
    if (hypercall(__HYPERVISOR_set_trap_table, uint64_t(g_traps)) == 0 &&
        (g_gdt_from_context || set_gdt(g_frame1, 3) == 0))
        while (!g_stop1) g_seen1 = load_ds(kSelData);
    hypercall(__HYPERVISOR_vcpu_op, VCPUOP_down, 1, 0);
    for (;;) {
    }
}

// Waits (a bounded time) until vCPU 1 has seen `want`.
bool vcpu1_sees(long want)
{
    const uint64_t t0 = __builtin_ia32_rdtsc();
    while (g_seen1 != want)
        if (__builtin_ia32_rdtsc() - t0 > 20000000000ull) return false;
    return true;
}

void update_descriptor_on_two_vcpus(const start_info_t* si, uint64_t entry1)
{
    g_gdt[1] = kData3;
    check("set_gdt on vCPU 0", set_gdt(g_frame1, 3), 0);
    static vcpu_guest_context_t ctx;
    ctx.flags = VGCF_in_kernel;   // else it starts in user mode, which needs ctrlreg[1]
    ctx.user_regs.rip = uint64_t(&vcpu1_loads);
    ctx.user_regs.rsp = uint64_t(g_stack1 + sizeof(g_stack1) - 8);
    ctx.ctrlreg[3] = xen_pfn_to_cr3(reinterpret_cast<const uint64_t*>(si->mfn_list)[0]);
    check("initialise vCPU 1", hypercall(__HYPERVISOR_vcpu_op, VCPUOP_initialise, 1, uint64_t(&ctx)), 0);
    check("up vCPU 1", hypercall(__HYPERVISOR_vcpu_op, VCPUOP_up, 1, 0), 0);
    check("vCPU 1 loads 0x0b from its own copy of the frame", vcpu1_sees(0), 1);
    check("update_descriptor: entry 1 not present", hypercall(__HYPERVISOR_update_descriptor, entry1, kData3 & ~kP), 0);
    check("  vCPU 0: #NP", load_ds(kSelData), kNp | 0x08);
    check("  vCPU 1: #NP", vcpu1_sees(kNp | 0x08), 1);
    check("update_descriptor: entry 1 present again", hypercall(__HYPERVISOR_update_descriptor, entry1, kData3), 0);
    check("  vCPU 0: loads", load_ds(kSelData), 0);
    check("  vCPU 1: loads", vcpu1_sees(0), 1);
    g_stop1 = true;
    const uint64_t t0 = __builtin_ia32_rdtsc();
    while (hypercall(__HYPERVISOR_vcpu_op, VCPUOP_is_up, 1, 0) != 0 && __builtin_ia32_rdtsc() - t0 < 20000000000ull)
        hypercall(__HYPERVISOR_sched_op, SCHEDOP_yield, 0);
    check("vCPU 1 went down", hypercall(__HYPERVISOR_vcpu_op, VCPUOP_is_up, 1, 0), 0);

    // VCPUOP_initialise's gdt_frames and gdt_ents (Linux's per-CPU GDT for a
    // secondary CPU): checked as set_gdt checks them, and vCPU 1 starts
    // with those entries, loading 0x0b with no set_gdt of its own.
    ctx.gdt_frames[0] = g_frame1[0];
    ctx.gdt_ents = FIRST_RESERVED_GDT_ENTRY + 1;
    check("initialise with too many GDT entries: -EINVAL",
          hypercall(__HYPERVISOR_vcpu_op, VCPUOP_initialise, 1, uint64_t(&ctx)), -XEN_EINVAL);
    ctx.gdt_frames[0] = p2m(si)[0];   // the L4: a page table
    ctx.gdt_ents = 3;
    check("initialise with a page table as its GDT frame: -EINVAL",
          hypercall(__HYPERVISOR_vcpu_op, VCPUOP_initialise, 1, uint64_t(&ctx)), -XEN_EINVAL);
    ctx.gdt_frames[0] = g_frame1[0];
    g_gdt_from_context = true;
    g_stop1 = false;
    g_seen1 = -1;
    check("initialise vCPU 1 with the frame as its GDT", hypercall(__HYPERVISOR_vcpu_op, VCPUOP_initialise, 1,
                                                                   uint64_t(&ctx)), 0);
    check("up vCPU 1", hypercall(__HYPERVISOR_vcpu_op, VCPUOP_up, 1, 0), 0);
    check("vCPU 1 loads 0x0b from the GDT its context gave", vcpu1_sees(0), 1);
    g_stop1 = true;
    const uint64_t t1 = __builtin_ia32_rdtsc();
    while (hypercall(__HYPERVISOR_vcpu_op, VCPUOP_is_up, 1, 0) != 0 && __builtin_ia32_rdtsc() - t1 < 20000000000ull)
        hypercall(__HYPERVISOR_sched_op, SCHEDOP_yield, 0);
    check("vCPU 1 went down again", hypercall(__HYPERVISOR_vcpu_op, VCPUOP_is_up, 1, 0), 0);
}

} // namespace

extern "C" [[noreturn]] void xenpv_start(const start_info_t* si)
{
    write("gdt guest: running\n");
    const uint64_t* p2m = tiny::p2m(si);
    const xen_pfn_t mfn = p2m[(uint64_t(g_gdt) - XENPV_VIRT_BASE) >> 12];
    const xen_pfn_t frame[1] = {mfn};
    trap_info_t traps[] = {{11, 0, FLAT_RING3_CS64, uint64_t(&seg_np)},
                           {13, 0, FLAT_RING3_CS64, uint64_t(&seg_gp)},
                           {14, 0, FLAT_RING3_CS64, uint64_t(&seg_pf)},
                           {0, 0, 0, 0}};
    check("set_trap_table", hypercall(__HYPERVISOR_set_trap_table, uint64_t(traps)), 0);
    check("no guest entries yet: 0x0b is #GP", load_ds(kSelData), kGp | 0x08);
    // Found by the hostile guest (docs/security.md §7.10): with the reset
    // LDTR the CPU read the descriptor at linear address 0x2b90, a #PF.
    check("an LDT selector is #GP: there is no LDT", load_ds(0x0f), kGp | 0x0c);
    check("an LDT selector far into it is #GP", load_ds(0x2b97), kGp | 0x2b94);

    g_gdt[1] = kData3;
    g_gdt[2] = kCode3;
    check("set_gdt with a data and a code descriptor", set_gdt(frame, 3), 0);
    check("load 0x0b into %ds", load_ds(kSelData), 0);
    check("%ds holds 0x0b", ds(), kSelData);
    asm volatile("mov %0, %%es; mov %0, %%fs" : : "r"(uint32_t(kSelData)));
    check("far return through code selector 0x13", long(run_on_cs(kSelCode)), kSelCode);

    // From here the frame's entry 1 is not present: a GDT taken from the
    // frame again would make loading 0x0b #NP.
    g_gdt[1] = kData3 & ~kP;
    auto unchanged = [] { return load_ds(kSelData) == 0 && run_on_cs(kSelCode) == kSelCode; };
    check("the guest's write to its frame changes nothing", unchanged(), 1);
    const uint64_t bad[] = {kTss3, kGate3, kIntr3, kLdt3};
    for (uint64_t d : bad) {
        g_gdt[3] = d;
        check("set_gdt with an invalid descriptor", set_gdt(frame, 4), -XEN_EINVAL);
        check("an invalid descriptor changed nothing", unchanged(), 1);
    }
    g_gdt[3] = 0;
    check("too many entries", set_gdt(frame, FIRST_RESERVED_GDT_ENTRY + 1), -XEN_EINVAL);
    const xen_pfn_t l4 = p2m[(si->pt_base - XENPV_VIRT_BASE) >> 12];
    const xen_pfn_t hypervisor[1] = {p2m[0] - 1}, beyond[1] = {1ull << 40}, table[1] = {l4};
    check("a frame of the hypervisor", set_gdt(hypervisor, 3), -XEN_EPERM);
    check("a frame beyond memory", set_gdt(beyond, 3), -XEN_EINVAL);
    check("the L4, a page table", set_gdt(table, 3), -XEN_EINVAL);
    check("an unmapped frame list", long(hypercall(__HYPERVISOR_set_gdt, 0x0000100000000000, 3)), -XEN_EFAULT);
    check("the failed calls changed nothing", unchanged(), 1);

    // The largest GDT (14 frames, here all the same one): now entry 1 is
    // the frame's, not present.
    xen_pfn_t frames[FIRST_RESERVED_GDT_PAGE];
    for (xen_pfn_t& f : frames) f = mfn;
    check("set_gdt of FIRST_RESERVED_GDT_ENTRY entries", set_gdt(frames, FIRST_RESERVED_GDT_ENTRY), 0);
    check("a not-present entry is #NP", load_ds(kSelData), kNp | 0x08);
    check("entry 2 + 512 is the frame's entry 2", long(run_on_cs(kSelCode + 512 * 8)), kSelCode + 512 * 8);
    // An empty GDT while %ds still holds 0x0b: the hypercall returns, the
    // next load of 0x0b is #GP.
    g_gdt[1] = kData3;
    // Xen's rule (hypervisor/arch/x86_64/pv/descriptors.cc): a DPL below 3 raised to 3, in the frame
    // too; 32-bit code (compatibility mode) and data with L set taken.
    const uint64_t taken[][2] = {{kCode0, kCode3}, {kData3 & ~kDpl, kData3}, {kCode32 & ~kDpl, kCode32},
                                 {kData3 | (1ull << 53), kData3 | (1ull << 53)}, {kTss3 & ~kP, kTss3 & ~kP}};
    for (const auto& t : taken) {
        g_gdt[3] = t[0];
        check("set_gdt of a descriptor Xen's rule takes", set_gdt(frame, 4), 0);
        check("  the frame holds it as the rule fixes it", g_gdt[3] == t[1], 1);
    }
    g_gdt[3] = 0;
    check("set_gdt of 3 entries", set_gdt(frame, 3), 0);
    check("load 0x0b again", load_ds(kSelData), 0);
    check("set_gdt of no entries", set_gdt(frame, 0), 0);
    check("%ds still holds 0x0b", ds(), kSelData);
    check("0x0b is gone: #GP", load_ds(kSelData), kGp | 0x08);
    check("back to FLAT_RING3_DS32", load_ds(FLAT_RING3_DS32), 0);
    if (hypercall(__HYPERVISOR_vcpu_op, VCPUOP_is_up, 1, 0) == 0) {   // a second vCPU, down
        write("gdt guest: update_descriptor with vCPU 1 running\n");
        g_traps = traps;
        g_frame1[0] = mfn;
        update_descriptor_on_two_vcpus(si, (mfn << 12) + 8);
    }
    finish("gdt guest");
}
