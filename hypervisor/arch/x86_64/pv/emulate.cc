// What Xen emulates for a 64-bit PV kernel
// (docs/abi.md §10 "Emulation"). The kernel runs in ring 3, so the CPU
// refuses it every privileged instruction (#GP(0)), every INT n but through
// the DPL-3 gates of #BP and #OF (#GP with the IDT vector in the error code)
// and Xen's forced-emulation prefix (#UD at its UD2). Before such an
// exception is bounced, the hypervisor does what Xen does for a PV kernel:
//
// - INT n whose trap-table entry has a DPL the guest's mode passes: the
//   event goes to the handler of vector n, with no error code and RIP past
//   the instruction (Xen's permit_softint: its kernel mode passes any DPL but
//   0, its user mode DPL 3). INT $0x80 goes to its handler whatever the
//   DPL, from either mode, as Xen's int80 gate (entry_int80) takes it.
//
// In the guest's user mode (pv/guest_mode.h) only INT n, the forced
// CPUID, the virtual CR0.TS's #NM and debug traps are handled; a privileged
// instruction or a #PF keeps its exception, which goes to the guest's
// kernel, as Xen emulates privileged instructions and page-table writes for
// a PV kernel only.
// - The privileged instructions Xen's PV emulator takes: mov from CR0, CR2,
//   CR3, CR4; mov to CR0 (TS only), CR2, CR3 (MMUEXT_NEW_BASEPTR's work),
//   CR4 (its guest-controlled bit DE, the rest ignored); mov to and from
//   %dr0-%dr7 (set_debugreg / get_debugreg, pv/debugreg.cc: #UD for
//   -ENODEV, #GP(0) for any other refusal); clts; wbinvd (a no-op, as for
//   any domain without cache-flush rights); rdmsr of the MSRs below; wrmsr
//   of the %fs/%gs bases and of Xen's hypercall-page MSR; port I/O, cli
//   and sti when the virtual IOPL allows (pv/port_io.cc). Everything else
//   (other wrmsr, hlt, which Xen's PV emulator does not take either) keeps
//   the #GP(0) the CPU raised, which is what Xen delivers too when it does
//   not emulate.
// - `ud2; .ascii "xen"; cpuid` (bytes 0f 0b 78 65 6e 0f a2): CPUID as a PV
//   guest sees it, Xen's leaves 0x40000000-0x40000002 included.
//
// Every path reads the instruction's bytes from guest memory through the
// guest's own page tables (Platform::copy_from_guest, as a hypercall's
// pointer), so a page another vCPU unmaps or rewrites meanwhile yields
// either the bytes that are there now or nothing; nothing read is trusted
// beyond the bytes checked. Prefixes other than one REX are not decoded:
// such an instruction keeps its exception (Xen's full emulator would take
// it; a difference documented in docs/abi.md §11).
#include <pvmmu/abi.h>
#include <xen/arch-x86/cpuid.h>

#include "core/hypercall.h"
#include "core/refs.h"
#include "cpu/cpu_bits.h"
#include "cpu/cpu_features.h"
#include "cpu/exceptions.h"
#include "cpu/percpu.h"
#include "cpu/quiesce.h"
#include "cpu/selectors.h"
#include "cpu/x86.h"
#include "mm/core_glue.h"
#include "mm/direct_map.h"
#include "mm/platform.h"
#include "pv/cpuid.h"
#include "pv/debugreg.h"
#include "pv/decode.h"
#include "pv/domain.h"
#include "pv/emulate.h"
#include "pv/fpu.h"
#include "pv/guest_mode.h"
#include "pv/place.h"
#include "pv/port_io.h"
#include "pv/segment_base.h"
#include "pv/traps.h"
#include "pv/vcpu_info.h"

namespace pvmmu::x86 {

namespace {

// The copies to and from the guest as direct calls (mm/core_glue.h bare_metal).
BareMetal& platform() { return bare_metal(); }

// General-purpose register `i` (ModRM numbering, REX extended) of the frame.
uint64_t& gpr(TrapFrame& f, unsigned i)
{
    uint64_t* const regs[16] = {&f.rax, &f.rcx, &f.rdx, &f.rbx, &f.rsp, &f.rbp, &f.rsi, &f.rdi,
                                &f.r8,  &f.r9,  &f.r10, &f.r11, &f.r12, &f.r13, &f.r14, &f.r15};
    return *regs[i & 15];
}

// The CR0 a PV kernel reads: the CPU's, with the virtual TS (Xen's read_cr).
uint64_t guest_cr0(const VcpuArch& a) { return (read_cr0() & ~uint64_t(CR0_TS)) | (a.fpu_ts ? CR0_TS : 0); }

// The CR4 bits Xen shows a PV kernel of the hypervisor's own settings
// (PV_CR4_GUEST_VISIBLE_MASK), and the guest-controlled ones Xen keeps when
// the domain's CPUID has the feature (TSD, DE, FSGSBASE, OSXSAVE): pvmmu
// keeps DE, a virtual bit that only changes what DR4/DR5 mean
// (pv/dr.h); writes of the others are ignored (docs/abi.md §12).
constexpr uint64_t kCr4Visible = CR4_PAE | CR4_MCE | CR4_OSFXSR | CR4_OSXMMEXCPT;

// A change of the core's state from a trap (not a hypercall): inside a
// section, with interrupts on, as syscall_dispatch runs one, so that the
// invariant check never sees it half done and TLB shootdowns are served.
template <class F>
auto in_core(F&& fn)
{
    sti();
    const auto r = [&] {
        const Section s;
        return fn();
    }();
    cli();
    return r;
}

bool read_cr(Vcpu& v, unsigned cr, uint64_t& val)
{
    switch (cr) {
    case 0: val = guest_cr0(arch(v)); return true;
    case 2: val = arch(v).cr2; return true;
    // Xen's format (xen_pfn_to_cr3): the machine frame of the kernel L4.
    case 3: val = xen_pfn_to_cr3(v.guest_table.v); return true;
    case 4: val = (read_cr4() & kCr4Visible) | (arch(v).cr4_de ? uint64_t(CR4_DE) : 0); return true;
    default: return false;
    }
}

bool write_cr(Vcpu& v, unsigned cr, uint64_t val)
{
    VcpuArch& a = arch(v);
    switch (cr) {
    case 0:   // only TS may change (Xen: "Attempt to change unmodifiable CR0 flags" is a #GP)
        if ((val ^ guest_cr0(a)) & ~uint64_t(CR0_TS)) return false;
        set_fpu_ts(a, val & CR0_TS);
        return true;
    case 2:
        a.cr2 = val;
        if (vcpu_info* info = guest_vcpu_info(v)) info->arch.cr2 = val;
        return true;
    case 3: {
        // Xen's PV meaning: the machine frame of an L4 of the domain
        // (xen_cr3_to_pfn), made the vCPU's root as MMUEXT_NEW_BASEPTR
        // makes it (core/mmuext.cc, the same path and checks); refused, #GP.
        mmuext_op_t op{};
        op.cmd = MMUEXT_NEW_BASEPTR;
        op.arg1.mfn = val >> 12;
        return in_core([&] { return mmuext_one(*core(), v, op); }) == 0;
    }
    case 4:   // never a #GP; DE kept where the guest's CPUID has it
        a.cr4_de = (val & CR4_DE) && boot_cpu_features().de;
        return true;
    default:
        return false;
    }
}

// RDMSR of the MSRs Xen's PV emulator answers that pvmmu can answer the
// same: the segment bases (the kernel's %gs one swapped out since entry,
// IA32_KERNEL_GS_BASE the user mode's, as set_segment_base keeps them) and
// EFER (its known bits). #GP for the rest.
bool read_msr(Vcpu& v, uint32_t msr, uint64_t& val)
{
    switch (msr) {
    case MSR_FS_BASE: val = rdmsr(MSR_FS_BASE); return true;
    case MSR_GS_BASE: val = rdmsr(MSR_KERNEL_GS_BASE); return true;
    case MSR_KERNEL_GS_BASE: val = arch(v).gs_base_user; return true;
    case MSR_EFER: val = rdmsr(MSR_EFER) & (EFER_SCE | EFER_LME | EFER_LMA | EFER_NXE); return true;
    default: return false;
    }
}

// WRMSR: the segment bases, as set_segment_base (#GP(0) where it would say
// -EINVAL), and Xen's hypercall-page MSR (CPUID 0x40000002 EBX), whose value
// is a machine address (a PV guest's frame number is the machine's) with the
// page's index, which must be 0 (one page), in bits 11:0: the hypercall page
// is written into that frame of the domain's, which must be able to be
// writable (owned, not a page table; a reference held while it is written),
// as Xen's wrmsr_hypervisor_regs does. #GP(0) for anything else.
bool write_msr(Vcpu& v, uint32_t msr, uint64_t val)
{
    switch (msr) {
    case MSR_FS_BASE: return set_segment_base(v, SEGBASE_FS, val);
    case MSR_GS_BASE: return set_segment_base(v, SEGBASE_GS_KERNEL, val);
    case MSR_KERNEL_GS_BASE: return set_segment_base(v, SEGBASE_GS_USER, val);
    default: break;
    }
    if (msr != XEN_CPUID_FIRST_LEAF || (val & (kPageSize - 1))) return false;
    Hypervisor& hv = *core();
    const Mfn m{val >> 12};
    return in_core([&] {
        if (!hv.mem().valid(m) || get_page_and_type(hv, m, v.domain->id, PageType::Writable)) return false;
        write_hypercall_page(dmap<uint8_t>(maddr_of(m)));
        put_page_and_type(hv, m);
        return true;
    });
}

// The processor's CPUID, for pv_cpuid (pv/cpuid.h).
CpuidRegs raw_cpuid(uint32_t leaf, uint32_t sub) { return cpuid(leaf, sub); }

// CPUID as Xen's PV guests see it: Xen's leaves at 0x40000000 (the signature
// and the highest leaf pvmmu fills, the version xen_version gives, one
// hypercall page, written by its MSR (write_msr) as by the ELF note), and the
// CPU's leaves through Xen's default PV policy (pv/cpuid.h; docs/abi.md
// §10 "Emulation", §12.2).
CpuidRegs guest_cpuid(const Vcpu& v, uint32_t leaf, uint32_t sub)
{
    if ((leaf & 0xffff0000u) == XEN_CPUID_FIRST_LEAF) {
        switch (leaf) {
        case XEN_CPUID_LEAF(0):
            return {XEN_CPUID_LEAF(2), XEN_CPUID_SIGNATURE_EBX, XEN_CPUID_SIGNATURE_ECX, XEN_CPUID_SIGNATURE_EDX};
        case XEN_CPUID_LEAF(1): return {uint32_t(kXenVersion), 0, 0, 0};
        case XEN_CPUID_LEAF(2): {
            const bool ad = v.domain->policy.allows(Perm::MmuAtomic);
            return {1, XEN_CPUID_FIRST_LEAF, ad ? XEN_CPUID_FEAT1_MMU_PT_UPDATE_PRESERVE_AD : 0u, 0};
        }
        default: return {0, 0, 0, 0};
        }
    }
    return pv_cpuid(leaf, sub, raw_cpuid);
}

// INT n (CD ib) refused by the gate's DPL (pv/decode.h: the vector from
// the instruction, checked against the error code). The guest's kernel mode
// passes any DPL but 0.
bool software_interrupt(Vcpu& v, TrapFrame& f)
{
    uint8_t b[2];
    const int n = software_int_vector(b, guest_fetch(v, f.rip, b, 2), f.error);
    if (n < 0) return false;
    const TrapEntry& t = arch(v).trap[n];
    constexpr int kInt80 = 0x80;
    const bool permitted = n == kInt80 || (guest_in_user_mode(v) ? t.dpl == 3 : t.dpl != 0);
    if (!permitted || !t.address) return false;
    TrapFrame g = f;
    g.rip = f.rip + 2;
    if (!guest_deliver(g, unsigned(n), false)) return false;
    f = g;
    return true;
}

// MOV from or to %drN: get_debugreg / set_debugreg (pv/debugreg.cc); the
// exception Xen's emulator raises when they refuse: #UD for a register that
// does not exist (-ENODEV), #GP(0) for a value refused.
bool move_dr(Vcpu& v, TrapFrame& f, const PrivInsn& in)
{
    long rc;
    if (in.op == PrivOp::ReadDr) {
        uint64_t val;
        rc = dr_read(arch(v).dr, in.cr, guest_dr_policy(v), val);
        if (!rc) gpr(f, in.reg) = val;
    } else {
        rc = guest_set_debugreg(v, in.cr, gpr(f, in.reg));
    }
    if (rc == -XEN_ENODEV) f.vector = kExcUD, f.error = 0;
    return rc == 0;
}

// The instructions of the #GP(0) path: the length done, 0 when not emulated
// (f holds the exception to deliver), -1 when done without moving RIP (a
// REP string instruction in part). *hits: the I/O breakpoints met.
int privileged(Vcpu& v, TrapFrame& f, uint32_t* hits)
{
    uint8_t b[8];   // prefixes, REX, opcode, ModRM or an immediate
    const PrivInsn in = decode_privileged(b, guest_fetch(v, f.rip, b, sizeof(b)));
    if (!emulated(in, uint32_t(f.rcx))) return 0;
    uint64_t val;
    switch (in.op) {
    case PrivOp::None: return 0;
    case PrivOp::In: case PrivOp::Out: case PrivOp::Ins: case PrivOp::Outs: case PrivOp::Cli: case PrivOp::Sti:
        return guest_port_io(v, f, in, hits);
    case PrivOp::ReadDr: case PrivOp::WriteDr:
        if (!move_dr(v, f, in)) return 0;
        break;
    case PrivOp::Clts: set_fpu_ts(arch(v), false); break;
    case PrivOp::Wbinvd: break;   // no cache to flush for a domain without I/O memory
    case PrivOp::ReadCr:
        if (!read_cr(v, in.cr, val)) return 0;
        gpr(f, in.reg) = val;
        break;
    case PrivOp::WriteCr:
        if (!write_cr(v, in.cr, gpr(f, in.reg))) return 0;
        break;
    case PrivOp::Rdmsr:
        if (!read_msr(v, uint32_t(f.rcx), val)) return 0;
        f.rax = uint32_t(val);
        f.rdx = val >> 32;
        break;
    case PrivOp::Wrmsr:
        if (!write_msr(v, uint32_t(f.rcx), (f.rdx << 32) | uint32_t(f.rax))) return 0;
        break;
    }
    return in.len;
}

// Xen's forced-emulation prefix before CPUID (<xen/arch-x86/xen.h>
// XEN_EMULATE_PREFIX: ud2a; .ascii "xen").
unsigned forced_cpuid(Vcpu& v, TrapFrame& f)
{
    uint8_t b[kForcedCpuidLen];
    if (!is_forced_cpuid(b, guest_fetch(v, f.rip, b, sizeof(b)))) return 0;
    const CpuidRegs r = guest_cpuid(v, uint32_t(f.rax), uint32_t(f.rcx));
    f.rax = r.eax, f.rbx = r.ebx, f.rcx = r.ecx, f.rdx = r.edx;
    return kForcedCpuidLen;
}

} // namespace

unsigned guest_fetch(Vcpu& v, uint64_t rip, uint8_t* b, unsigned n)
{
    if (!platform().copy_from_guest(v, b, Vaddr{rip}, n)) return n;
    const unsigned first = unsigned(kPageSize - (rip & (kPageSize - 1)));
    return first < n && !platform().copy_from_guest(v, b, Vaddr{rip}, first) ? first : 0;
}

bool guest_emulate(TrapFrame& f)
{
    Vcpu& v = *this_cpu().vcpu;
    int len = 0;
    uint32_t hits = 0;
    switch (f.vector) {
    case kExcDB: return guest_debug_trap(f);   // a breakpoint or single step of the guest's
    case kExcNM:   // #NM of the virtual TS: it ends, the guest's handler runs (Xen's do_device_not_available)
        if (arch(v).fpu_ts) set_fpu_ts(arch(v), false);
        return false;
    case kExcUD:
        if (!long_mode_cs(f.cs)) return false;
        len = forced_cpuid(v, f);
        break;
    case kExcGP:
        if (!long_mode_cs(f.cs)) return false;
        if (f.error) return software_interrupt(v, f);
        if (guest_in_user_mode(v)) return false;
        len = privileged(v, f, &hits);
        break;
    default: return false;
    }
    if (len == 0) return false;
    if (len < 0) return true;   // the rest of a REP when the guest runs it again
    completed(f, unsigned(len), hits);
    return true;
}

} // namespace pvmmu::x86
