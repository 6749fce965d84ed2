// A PV guest domain on bare metal (docs/abi.md "Bare-metal guest ABI"): what
// the hypervisor keeps per domain and per vCPU beyond the core's Domain and
// Vcpu, and the guest's part of the address space. Built by loader.cc, run
// by run.cc; the rest of this folder is the ABI the guest sees, one concern
// per file (docs/architecture.md).
#pragma once

#include "core/domain_builder.h"
#include "core/events.h"
#include "core/grant_table.h"
#include "core/guest_va.h"
#include "core/hypercall_frame.h"
#include "core/vcpu_op_rules.h"
#include "core/watchdog.h"
#include "cpu/percpu.h"
#include "cpu/traps.h"
#include "pv/dr.h"

#include <atomic>

#include <pvmmu/abi.h>
#include <xen/io/console.h>

namespace pvmmu::x86 {

// A vCPU's console output not yet printed: its current line (pv/console.cc).
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
    std::atomic<uint64_t> port_io{0};   // emulated port accesses (pv/port_io.cc), one per IN/OUT or element
    std::atomic<uint64_t> halts{0};     // HLTs its CPU ran while it was blocked (pv/event_delivery.cc)
};

// One vector of the virtual IDT (set_trap_table): the handler, 0 = none, and
// the DPL of trap_info_t.flags (TI_GET_DPL), which decides whether a software
// INT n reaches it (pv/emulate.cc); TI_GET_IF, an "interrupt gate": its
// delivery masks event upcalls, as Xen's (pv/traps.cc).
struct TrapEntry {
    uint64_t address = 0;
    uint8_t dpl = 0;
    bool mask_events = false;
};

// What the hypervisor keeps per vCPU beyond the core's Vcpu: its state
// (core/vcpu_op_rules.h), its start registers and its virtual IDT and
// callbacks (pv/traps.cc).
struct VcpuArch {
    std::atomic<VcpuState> state{VcpuState::Down};
    TrapFrame start{};          // the registers the vCPU starts with (guest_enter)
    TrapEntry trap[256];        // set_trap_table, by vector
    bool fpu_ts = false;        // the virtual CR0.TS (fpu_taskswitch, clts, mov to CR0)
    uint64_t cr2 = 0;           // the virtual CR2: the last bounced #PF's address, or mov to CR2
    bool cr4_de = false;        // the virtual CR4.DE (mov to CR4): DR4/DR5 no longer alias DR6/DR7
    uint8_t iopl = 0;           // the virtual IOPL (PHYSDEVOP_set_iopl): port I/O from the kernel at 1 and up
    DebugRegs dr;               // set_debugreg, mov to %drN (pv/debugreg.cc); in the CPU while it runs
    uint64_t callback[8] = {};  // set_callbacks / callback_op, by CALLBACKTYPE_*
    // Bit CALLBACKTYPE_*: its delivery masks event upcalls (CALLBACKF_mask_events,
    // or VCPUOP_initialise's VGCF_*_disables_events), as Xen's
    // <xen/callback.h>; the event callback's always does, so its bit is unused.
    uint8_t callback_masks = 0;
    uint64_t kernel_ss = 0, kernel_sp = 0;   // stack_switch
    // The guest's mode (pv/guest_mode.h): user mode runs on the user L4.
    // user_mode_next: an iret to user mode, done once the hypercall ends
    // (pv/hypercall.cc), after the last write of the call into kernel memory.
    bool user_mode = false, user_mode_next = false;
    // VCPUOP_initialise without VGCF_in_kernel: the vCPU starts in its user
    // mode (guest_run), as on Xen.
    bool start_user = false;
    // The %fs and kernel %gs bases the vCPU enters with (VCPUOP_initialise;
    // 0 at boot), loaded by guest_run; from then on the CPU's MSRs hold
    // %fs's and the base of the mode the vCPU is in (set_segment_base and
    // wrmsr write those), and the other mode's %gs base is kept here:
    // gs_base_user in kernel mode, gs_base_kernel in user mode
    // (pv/guest_mode.cc).
    uint64_t fs_base = 0, gs_base_kernel = 0, gs_base_user = 0;
    // MMUEXT_SET_LDT's linear address and entry count; the validated copy the
    // CPU reads is its CPU's (g_cpu_ldt, pv/descriptors.cc). Both 0 at start.
    uint64_t ldt_base = 0;
    uint32_t ldt_ents = 0;
    // VCPUOP_initialise's gdt_frames and gdt_ents, loaded when the vCPU starts
    // (pv/descriptors.cc guest_gdt_start); 0 entries: none, as at boot.
    uint64_t start_gdt[FIRST_RESERVED_GDT_PAGE] = {};
    uint32_t start_gdt_ents = 0;
    // Xen's runstate (pv/runstate.cc): offline, since system time 0, until
    // the vCPU first runs; the registered area's guest address, 0: none. Kept
    // across VCPUOP_down and VCPUOP_initialise, as on Xen.
    TicketLock runstate_lock;
    vcpu_runstate_info runstate{RUNSTATE_offline, 0, {}};
    uint64_t runstate_area = 0;
    // VCPUOP_register_vcpu_info's place (direct map), null: shared_info's
    // slot (pv/vcpu_info.cc). Set once, before the vCPU runs or by itself.
    std::atomic<vcpu_info*> info{nullptr};
    ConsoleLine line;
    VcpuCounters counters;
};

struct GuestDomain {
    Domain dom;
    DomainLayout layout;
    VcpuArch vcpu[kMaxVcpus];
    shared_info_t* shared = nullptr;         // the domain's shared_info page (direct map)
    // Where its DomainEvents is built (pv/events.h guest_events_init);
    // Domain::events points at it from then on.
    alignas(DomainEvents) unsigned char events_mem[sizeof(DomainEvents)] = {};
    xencons_interface* console = nullptr;    // its console ring (start_info.console.domU)
    // Its grant table (pv/grants.h guest_grants_init), built here;
    // Domain::grants points at it from then on. Its table frames are the
    // domain's, listed in grant_frames; the active entries and the maptrack
    // are in grant_storage_frames hypervisor frames from grant_storage.
    alignas(GrantTable) unsigned char grants_mem[sizeof(GrantTable)] = {};
    Mfn grant_frames[gnt::kDefaultMaxFrames] = {};
    uint32_t grant_nr_frames = 0;
    Mfn grant_storage{0};
    uint64_t grant_storage_frames = 0;
    std::atomic<unsigned> nr_up{0};          // vCPUs up (vcpu_up) and not down
    std::atomic<unsigned> on_cpu{0};         // vCPUs a CPU has taken to run and not left
    std::atomic<bool> gone{false};           // its memory given back (pv/run.cc)
    // The idle domain this one was booted with (`peer=N`), whose frames it may
    // learn (PVMMUOP_facts) to name them in requests that must be refused.
    const GuestDomain* peer = nullptr;
    // Booted with the module word `invariant-check`: may run the whole-machine
    // invariant check (PVMMUOP_check_invariants), a test facility.
    bool invariant_check = false;
    // vm_assist: the VMASST_TYPE_* bits the domain enabled (pv/vm_assist.cc).
    std::atomic<uint64_t> vm_assist{0};
    // The PCI configuration address the domain last wrote to port 0xcf8 (a
    // 32-bit OUT), which it reads back, as on Xen (pv/port_io.cc).
    std::atomic<uint32_t> pci_cf8{0};
    // Orders the domain's descriptor-table changes (pv/descriptors.cc): set_gdt's
    // and MMUEXT_SET_LDT's copies into a CPU's buffers, update_descriptor's
    // writes to a frame and to every copy of it, and a CPU taking or leaving
    // the domain's copies, so no update is lost to a copy made meanwhile.
    // Per domain, so no domain can delay another's; a ticket lock, so none of
    // the domain's vCPUs waits for ever behind the others.
    TicketLock desc_lock;
    // Orders VCPUOP_register_vcpu_info's calls (Domain::held, each vCPU's once).
    TicketLock vcpu_info_lock;
    // SCHEDOP_shutdown_code's reason, which the domain's shutdown takes
    // (whatever reason that names), -1: none yet (pv/sched.cc).
    std::atomic<int> shutdown_code{-1};
    // SCHEDOP_watchdog's two timers (core/watchdog.h, pv/watchdog.cc), under
    // watchdog_lock; `watchdog_next` the earliest deadline, read without the
    // lock on every hypercall's return.
    TicketLock watchdog_lock;
    WatchdogTimers watchdog;
    std::atomic<uint64_t> watchdog_next{WatchdogTimers::kFree};
};

inline VcpuArch& arch(Vcpu& v) { return *static_cast<VcpuArch*>(v.platform_data); }
inline GuestDomain& guest_domain(Vcpu& v) { return *reinterpret_cast<GuestDomain*>(v.domain); }
inline const GuestDomain& guest_domain(const Vcpu& v) { return *reinterpret_cast<const GuestDomain*>(v.domain); }
static_assert(__builtin_offsetof(GuestDomain, dom) == 0);

// The guest's part of the address space and guest_va_ok: core/guest_va.h.

// The guest's registers as its last entry from ring 3 (SYSCALL, or a trap
// or interrupt) left them: at the top of this CPU's stack, where
// pv/syscall_entry.S and the IDT's TSS.RSP0 both put the frame.
inline TrapFrame& guest_regs()
{
    return *reinterpret_cast<TrapFrame*>(this_cpu().stack_top - sizeof(TrapFrame));
}

} // namespace pvmmu::x86
