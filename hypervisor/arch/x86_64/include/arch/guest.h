// PV guest domains on bare metal (SPEC §5, docs/abi.md "Bare-metal guest
// ABI"): a domain built from a guest kernel (guest_loader.cc), its vCPUs
// entered in ring 3 (guest_run.cc), hypercalls by SYSCALL
// (guest_hypercalls.cc), and the end of a domain (shutdown or crash), which
// ends the run once no domain is left.
#pragma once

#include "arch/guest_decode.h"
#include "arch/guest_dr.h"
#include "arch/percpu.h"
#include "arch/traps.h"
#include "core/domain_builder.h"
#include "core/hypercall_frame.h"

#include <atomic>

#include <pvmmu/abi.h>
#include <xen/io/console.h>

namespace pvmmu::x86 {

// What the hypervisor keeps per vCPU beyond the core's Vcpu: its start
// registers and its virtual IDT and callbacks (guest_traps.cc).
// Busy: a VCPUOP_initialise is changing the vCPU (vcpu_op calls of several
// vCPUs on one target are serialised by this state, guest_vcpu.cc).
enum class VcpuState : uint8_t { Down, Initialised, Busy, Up };

// A vCPU's console output not yet printed: its current line (guest_console.cc).
struct ConsoleLine {
    char buf[256] = {};
    uint16_t len = 0;
};

// What the hypervisor counts for a vCPU (PVMMUOP_vcpu_counters), on the CPU it
// is pinned to, and only for work its own domain asked for: a flush another
// domain's request caused is not counted, so no domain learns another's.
struct VcpuCounters {
    std::atomic<uint64_t> faults{0};
    std::atomic<uint64_t> flush_all{0}, flush_page{0};
    std::atomic<uint64_t> shootdowns_sent{0}, shootdowns_served{0};
    std::atomic<uint64_t> port_io{0};   // emulated port accesses (guest_io.cc), one per IN/OUT or element
};

// One vector of the virtual IDT (set_trap_table): the handler, 0 = none, and
// the DPL of trap_info_t.flags (TI_GET_DPL), which decides whether a software
// INT n reaches it (guest_emulate.cc).
struct TrapEntry {
    uint64_t address = 0;
    uint8_t dpl = 0;
};

struct VcpuArch {
    std::atomic<VcpuState> state{VcpuState::Down};
    TrapFrame start{};          // the registers the vCPU starts with (guest_enter)
    TrapEntry trap[256];        // set_trap_table, by vector
    bool fpu_ts = false;        // the virtual CR0.TS (fpu_taskswitch, clts, mov to CR0)
    uint64_t cr2 = 0;           // the virtual CR2: the last bounced #PF's address, or mov to CR2
    bool cr4_de = false;        // the virtual CR4.DE (mov to CR4): DR4/DR5 no longer alias DR6/DR7
    uint8_t iopl = 0;           // the virtual IOPL (PHYSDEVOP_set_iopl): port I/O from the kernel at 1 and up
    DebugRegs dr;               // set_debugreg, mov to %drN (guest_debug.cc); in the CPU while it runs
    uint64_t callback[8] = {};  // set_callbacks / callback_op, by CALLBACKTYPE_*
    uint64_t kernel_ss = 0, kernel_sp = 0;   // stack_switch
    // The %fs and kernel %gs bases the vCPU enters with (VCPUOP_initialise;
    // 0 at boot), loaded by guest_run; from then on the CPU's MSRs hold them
    // (set_segment_base and wrmsr write those). The user %gs base is only
    // kept: pvmmu has no guest user mode to load it for (guest_emulate.cc).
    uint64_t fs_base = 0, gs_base_kernel = 0, gs_base_user = 0;
    // MMUEXT_SET_LDT's linear address and entry count; the validated copy the
    // CPU reads is its CPU's (g_cpu_ldt, guest_gdt.cc). Both 0 at start.
    uint64_t ldt_base = 0;
    uint32_t ldt_ents = 0;
    // Xen's runstate (guest_runstate.cc): offline, since system time 0, until
    // the vCPU first runs; the registered area's guest address, 0: none. Kept
    // across VCPUOP_down and VCPUOP_initialise, as on Xen.
    TicketLock runstate_lock;
    vcpu_runstate_info runstate{RUNSTATE_offline, 0, {}};
    uint64_t runstate_area = 0;
    // VCPUOP_register_vcpu_info's place (direct map), null: shared_info's
    // slot (guest_vcpu_info.cc). Set once, before the vCPU runs or by itself.
    std::atomic<vcpu_info*> info{nullptr};
    ConsoleLine line;
    VcpuCounters counters;
};

struct GuestDomain {
    Domain dom;
    DomainLayout layout;
    VcpuArch vcpu[kMaxVcpus];
    shared_info_t* shared = nullptr;         // the domain's shared_info page (direct map)
    xencons_interface* console = nullptr;    // its console ring (start_info.console.domU)
    std::atomic<unsigned> nr_up{0};          // vCPUs up (vcpu_up) and not down
    std::atomic<unsigned> on_cpu{0};         // vCPUs a CPU has taken to run and not left
    std::atomic<bool> gone{false};           // its memory given back (guest_run.cc)
    // The idle domain this one was booted with (`peer=N`), whose frames it may
    // learn (PVMMUOP_facts) to name them in requests that must be refused.
    const GuestDomain* peer = nullptr;
    // Booted with the module word `invariant-check`: may run the whole-machine
    // invariant check (PVMMUOP_check_invariants), a test facility.
    bool invariant_check = false;
    // vm_assist: the VMASST_TYPE_* bits the domain enabled (guest_emulate.cc).
    std::atomic<uint64_t> vm_assist{0};
    // The PCI configuration address the domain last wrote to port 0xcf8 (a
    // 32-bit OUT), which it reads back, as on Xen (guest_io.cc).
    std::atomic<uint32_t> pci_cf8{0};
    // Orders the domain's descriptor-table changes (guest_gdt.cc): set_gdt's
    // and MMUEXT_SET_LDT's copies into a CPU's buffers, update_descriptor's
    // writes to a frame and to every copy of it, and a CPU taking or leaving
    // the domain's copies, so no update is lost to a copy made meanwhile.
    // Per domain, so no domain can delay another's; a ticket lock, so none of
    // the domain's vCPUs waits for ever behind the others.
    TicketLock desc_lock;
    // Orders VCPUOP_register_vcpu_info's calls (Domain::held, each vCPU's once).
    TicketLock vcpu_info_lock;
};

// The event channel of the console ring (start_info.console.domU.evtchn):
// EVTCHNOP_send on it makes the hypervisor print what the ring holds.
inline constexpr evtchn_port_t kConsolePort = 1;

inline VcpuArch& arch(Vcpu& v) { return *static_cast<VcpuArch*>(v.platform_data); }
inline GuestDomain& guest_domain(Vcpu& v) { return *reinterpret_cast<GuestDomain*>(v.domain); }
static_assert(__builtin_offsetof(GuestDomain, dom) == 0);

// The guest's part of the address space (layout.h): the lower half, and the
// upper half above the hypervisor's L4 slots 256..271, which the core reserves
// (HvConfig's defaults, which the bare-metal core runs with). Two compares: the
// copies of every hypercall check both ends of their range with it.
inline constexpr uint64_t kGuestLowerEnd = 0x0000800000000000;     // slot 256
inline constexpr uint64_t kGuestUpperStart = 0xFFFF880000000000;   // slot 272
static_assert(HvConfig{}.l4_reserved_first == 256 && HvConfig{}.l4_reserved_last == 271);
static_assert(kGuestUpperStart == (~0ull << 47 | uint64_t(HvConfig{}.l4_reserved_last + 1) << 39));

// An address a guest may name as code or stack: canonical, and not in the
// hypervisor's L4 slots.
constexpr bool guest_va_ok(uint64_t va) { return va < kGuestLowerEnd || va >= kGuestUpperStart; }
static_assert(guest_va_ok(0x00007fffffffffff) && !guest_va_ok(0x0000800000000000) &&
              !guest_va_ok(0xffff800000000000) && !guest_va_ok(0xffff87ffffffffff) &&
              guest_va_ok(0xffff880000000000) && guest_va_ok(~0ull));   // the ends of each part

// An exception of the running vCPU (from ring 3) delivered to the handler its
// trap table names, with Xen's x86-64 PV bounce frame on the guest's stack;
// false when there is no handler or the frame cannot be written.
bool guest_bounce(TrapFrame& f);

// An event of `vector` delivered to the running vCPU's handler for it, with
// the bounce frame above, an error code in it only when `error_code`: what
// guest_bounce does for a hardware exception, and a software INT n uses
// (no error code, RIP past the instruction). False as guest_bounce.
bool guest_deliver(TrapFrame& f, unsigned vector, bool error_code);

// The vCPU's runstate (guest_runstate.cc): `v` enters RUNSTATE_* `state`
// now, on its own CPU with its page tables loaded (its area is written
// there); VCPUOP_register_runstate_memory_area and VCPUOP_get_runstate_info
// of vCPU t for the caller.
void runstate_change(Vcpu& v, int state);
long runstate_register(Vcpu& caller, Vcpu& t, uint64_t arg);
long runstate_get(Vcpu& caller, Vcpu& t, uint64_t arg);

// The vcpu_info the hypervisor writes for v (its time, the virtual CR2):
// the registered one, else shared_info's slot, else none (null).
vcpu_info* guest_vcpu_info(Vcpu& v);
// VCPUOP_register_vcpu_info of vCPU t for the caller.
long vcpu_info_register(Vcpu& caller, Vcpu& t, uint64_t arg);

// SYSCALL from compatibility mode (VECTOR_SYSCALL32): the guest's syscall32
// callback, or #UD; false when neither can be delivered.
bool guest_syscall32(TrapFrame& f);

// What Xen emulates for a PV kernel when the CPU refuses it in ring 3
// (guest_emulate.cc): for a #GP, an INT n the trap table's DPL allows and the
// privileged instructions Xen emulates; for a #UD, Xen's forced-emulation
// prefix; for a #NM, the virtual CR0.TS. True when f is ready to return to
// the guest (the instruction done, or another event delivered); false when
// the exception goes to the guest's handler as it is.
bool guest_emulate(TrapFrame& f);

// Up to n bytes at rip, as many as the guest's tables let be read (the
// instruction may end on a page that is gone); the count read
// (guest_emulate.cc).
unsigned guest_fetch(Vcpu& v, uint64_t rip, uint8_t* b, unsigned n);

// Xen's "writable page tables" (guest_ptwr.cc, docs/abi.md §12.5): a #PF
// of the guest kernel's write to one of its own L1 tables, emulated; the
// instruction's length, 0 when it is not (the #PF goes to the guest as the
// CPU raised it, CR2 included).
unsigned guest_pt_write(Vcpu& v, TrapFrame& f);

// A vCPU starting on this CPU: FPU instructions allowed (CR0.TS clear).
void guest_fpu_reset(Vcpu& v);

// The checks of set_trap_table (one entry; address 0 = no handler),
// set_callbacks and stack_switch, and what they set (guest_traps.cc): one
// piece of code for the hypercalls and for VCPUOP_initialise, which takes
// the same state from a vcpu_guest_context (guest_vcpu.cc).
bool trap_entry_ok(const trap_info_t& t);
TrapEntry trap_entry(const trap_info_t& t);
bool callbacks_ok(uint64_t event, uint64_t failsafe, uint64_t syscall);
void set_callbacks(VcpuArch& a, uint64_t event, uint64_t failsafe, uint64_t syscall);
bool kernel_stack_ok(uint64_t sp);
uint16_t kernel_stack_selector(uint64_t ss);

// The hypercalls of guest_traps.cc and the files named, for
// guest_hypercalls.cc's table (BareMetal::arch_hypercall): the arguments are
// the call's (a direct call's registers or a multicall entry's words); the
// ones that may be continued, or that replace the guest's registers (iret),
// give an HcResult.
HcResult do_set_trap_table(Vcpu& v, HypercallFrame& f);
HcResult do_iret(Vcpu& v, HypercallFrame& f);            // reads and replaces guest_regs()
long do_set_callbacks(Vcpu& v, HypercallFrame& f);
long do_callback_op(Vcpu& v, HypercallFrame& f);
long do_stack_switch(Vcpu& v, HypercallFrame& f);
long do_vcpu_op(Vcpu& v, HypercallFrame& f);             // guest_vcpu.cc
long do_set_gdt(Vcpu& v, HypercallFrame& f);             // guest_gdt.cc
long do_update_descriptor(Vcpu& v, HypercallFrame& f);   // guest_gdt.cc
HcResult do_console_io(Vcpu& v, HypercallFrame& f);      // guest_console.cc
long do_event_channel_op(Vcpu& v, HypercallFrame& f);    // guest_console.cc
long do_pvmmu_op(Vcpu& v, HypercallFrame& f);            // pvmmu_op.cc
long do_memory_op(Vcpu& v, HypercallFrame& f);           // guest_memory.cc
long do_fpu_taskswitch(Vcpu& v, HypercallFrame& f);      // guest_emulate.cc
long do_vm_assist(Vcpu& v, HypercallFrame& f);           // guest_emulate.cc
long do_set_segment_base(Vcpu& v, HypercallFrame& f);    // guest_emulate.cc
long do_set_debugreg(Vcpu& v, HypercallFrame& f);        // guest_debug.cc
long do_get_debugreg(Vcpu& v, HypercallFrame& f);        // guest_debug.cc
long do_physdev_op(Vcpu& v, HypercallFrame& f);          // guest_io.cc

// The running vCPU's debug registers (guest_debug.cc). DrPolicy of v: its
// CPUID and virtual CR4.DE.
DrPolicy guest_dr_policy(Vcpu& v);
// set_debugreg's work for the running vCPU: the virtual registers and, as
// they change, the CPU's. 0 or the errno of dr_write.
long guest_set_debugreg(Vcpu& v, unsigned reg, uint64_t value);
// The vCPU's breakpoints into this CPU (it starts running here), and the
// hypervisor's own (none) back when it leaves (cpu_leave_vcpu).
void guest_debug_load(Vcpu& v);
void guest_debug_unload();
// A #DB of the running vCPU from ring 3: the CPU's DR6 folded into the
// virtual one and the trap delivered to the guest's #DB handler (its domain
// crashed when it has none). Always true: f is ready to return to.
bool guest_debug_trap(TrapFrame& f);
// A #DB in ring 0 that a guest's data breakpoint raised while the hypervisor
// accessed that guest's memory (a copy for a hypercall, a bounce frame):
// ignored as on Xen, true. False for any other #DB, the hypervisor's bug.
bool guest_debug_in_hypervisor(const TrapFrame& f);
// An event the emulated instruction raised for the guest's debugger: the
// single step (TF) and the I/O breakpoints `hits` (B0-B3) into the virtual
// DR6, the #DB delivered. guest_emulate's last step.
void guest_debug_after_emulation(TrapFrame& f, uint32_t hits);

// Port I/O and CLI/STI of the running vCPU's kernel (guest_io.cc), as Xen
// does them for a domain that was granted no I/O ports: refused (#GP) unless
// the virtual IOPL allows it, then reads all-ones, writes dropped. The
// instruction's length when it is done, 0 when refused (f then holds the
// exception to deliver), -1 when a REP string instruction is done in part
// (RIP stays, the rest runs when the guest does it again); *hits: the I/O
// breakpoints met.
int guest_port_io(Vcpu& v, TrapFrame& f, const PrivInsn& in, uint32_t* hits);

// Prints what v's console line holds, ending it with a '\n' if it has none:
// when the vCPU stops (shutdown, crash, VCPUOP_down, its domain stopped).
// On v's own CPU only: the line is its vCPU's alone.
void guest_console_flush(Vcpu& v);

// The guest's registers as its last entry from ring 3 (SYSCALL, or a trap
// or interrupt) left them: at the top of this CPU's stack, where
// syscall_entry.S and the IDT's TSS.RSP0 both put the frame.
inline TrapFrame& guest_regs()
{
    return *reinterpret_cast<TrapFrame*>(this_cpu().stack_top - sizeof(TrapFrame));
}

// The counters of the vCPU running on this CPU when `origin`, the domain that
// asked for the work, is its own; nullptr otherwise (idle, or another's).
VcpuCounters* counters_for(const Domain* origin);

// Builds domain `id` from the ELF image [file, file + size) with nr_frames
// frames and nr_vcpus vCPUs (vCPU i on CPU first_cpu + i), loads it and
// prepares vCPU 0 to start at its entry point with start_info in %rsi; the
// domain then counts as running (guest_shutdown). 0, or a negative Xen errno
// with the reason printed.
// `cmdline` goes to start_info.cmd_line (the module string without its first
// word, the kernel's name).
int guest_load(DomId id, const uint8_t* file, size_t size, uint64_t nr_frames, unsigned nr_vcpus,
               CpuId first_cpu, const char* cmdline, GuestDomain& out);

// Xen's x86-64 PV hypercall page (32 bytes per number) written at `page`
// (guest_place.cc): for XEN_ELFNOTE_HYPERCALL_PAGE at load, and for a
// write of Xen's hypercall-page MSR (guest_emulate.cc).
void write_hypercall_page(uint8_t* page);

// Counts a built domain as running, until it shuts down.
void guest_domain_running();
// Domains that were ever counted running (an idle peer never is).
unsigned guest_domains_started();

// VCPUOP_up: the vCPU's CPU (idle) is handed the vCPU and kicked; 0, or
// -EINVAL when it was never initialised (guest_vcpu.cc). Also how every
// domain's vCPU 0 starts at boot (the boot CPU's kick to itself included).
long vcpu_up(Vcpu& v);

// This CPU's guest GDT entries all null and its LDT empty again: vCPU v
// starts with none, and this CPU's copies are its domain's from now on.
void guest_gdt_reset(Vcpu& v);

// MMUEXT_SET_LDT on bare metal (BareMetal::set_ldt, guest_gdt.cc).
int guest_set_ldt(Vcpu& v, Vaddr base, uint32_t ents);

// Sets this CPU up for guests: EFER.SCE and the SYSCALL MSRs. Every CPU.
void syscall_init();

// Runs vCPU `v` (of a domain guest_load built) on this CPU from its start
// registers, on its L4; never returns.
[[noreturn]] void guest_run(Vcpu& v);

// An idle CPU: halts with interrupts on (shootdowns are served) and runs the
// vCPU VCPUOP_up hands it (PerCpu::next, then a kVectorKick IPI). A vCPU
// still on this CPU is left first (cpu_leave_vcpu).
[[noreturn]] void cpu_idle();

// This CPU stops running its vCPU: the vCPU's last console line out, the
// hypervisor's tables loaded. When the vCPU's domain has shut down and this
// was its last vCPU on a CPU, the domain's memory is given back
// (core/domain_teardown.h), and once every domain's is, the core's
// invariants are checked and the run ends with the last shutdown's reason.
void cpu_leave_vcpu();

// The domain of the vCPU running on this CPU stops with `reason` (SHUTDOWN_*,
// <xen/sched.h>); its other vCPUs are kicked. When it was the last domain
// running, the run ends with HV_EXIT_SHUTDOWN + reason (boot_defs.h) once
// every domain's memory is given back (cpu_leave_vcpu). This CPU idles.
[[noreturn]] void guest_shutdown(unsigned reason);

// True once v's domain has shut down: v must not run on (traps.cc and
// syscall_dispatch check it on the way back to the guest).
bool guest_domain_stopped(const Vcpu& v);

// A fault the guest cannot be told about: reported, then a crash shutdown.
[[noreturn]] void guest_crash(const TrapFrame& f, const char* why);

} // namespace pvmmu::x86
