// The guest runtime's platform on bare metal (docs/design.md §6, docs/abi.md §10): a
// Xen PV guest kernel in ring 3 of pvmmu-hv. Hypercalls go through the
// hypercall page (the Transport), memory is plain loads, stores and lock
// cmpxchg whose faults the library's handler sees first (the Memory), the
// console is console_io, start_info becomes the library's BootInfo, and the
// run ends with SCHEDOP_shutdown.
//
// Each vCPU runs on a 16 KiB stack of its own, aligned to its size, whose
// lowest word points to the vCPU's Cpu: that is how this_cpu() finds it
// (a ring-3 guest cannot set its own %gs base).
#include <stddef.h>
#include <stdint.h>

#include <atomic>
#include <new>

#include <xen/io/console.h>

#include "guest/pte.h"
#include "hypercall.h"
#include "rt_platform.h"

// Symbols of entry.S, head.S and the linker script: hidden, so references
// stay RIP-relative (the image is linked static, there is no GOT to go through).
#pragma GCC visibility push(hidden)
extern "C" {
void xenpv_page_fault();
bool xenpv_load(uint64_t va, uint64_t* out);
bool xenpv_store(uint64_t va, uint64_t val);
int xenpv_cmpxchg(uint64_t va, uint64_t* expected, uint64_t desired);
bool xenpv_fetch(uint64_t va);
void xenpv_fetch_ret();
[[noreturn]] void xenpv_switch_stack(uint64_t top, void (*fn)());
extern const uint64_t xenpv_extable[], xenpv_extable_end[];
extern void (*__init_array_start[])(), (*__init_array_end[])();
}
#pragma GCC visibility pop

namespace pvmmu::guest::xenpv {

using pvmmu::xenpv::hypercall;

namespace {

constexpr uint64_t kStackSize = 16384;
constexpr unsigned kMaxXenpvVcpus = 16;

class XenpvCpu final : public Transport, public Memory {
public:
    long hypercall(unsigned op, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4) override
    {
        return pvmmu::xenpv::hypercall(op, a0, a1, a2, a3, a4);
    }
    // Shootdown IPIs reach the hypervisor by themselves: nothing to poll.
    void relax() override { asm volatile("pause" ::: "memory"); }

    bool load(Va va, uint64_t& out) override { return xenpv_load(va.v, &out); }
    bool store(Va va, uint64_t val) override { return xenpv_store(va.v, val); }
    uint64_t* direct(Va va, uint64_t) override { return reinterpret_cast<uint64_t*>(va.v); }
    bool cmpxchg(Va va, uint64_t& expected, uint64_t desired, bool& swapped) override
    {
        const int r = xenpv_cmpxchg(va.v, &expected, desired);
        swapped = r == 3;
        return r != 0;
    }
    bool fetch(Va va) override;
    void clean(Va) override {}   // x86 walkers are coherent with the data cache
};

// The leaf entry that maps va, by a walk of the domain's tables (the builder's
// L4, gpfn 0, which every vCPU runs on) read through the physmap. false when
// a level is not present or names a frame not the domain's.
bool leaf_entry(Va va, uint64_t& out)
{
    const Guest& g = rt::guest();
    Gpfn table = g.l4();
    for (unsigned l = 4; l >= 1; --l) {
        const auto* t = reinterpret_cast<const volatile uint64_t*>(g.va(table).v);
        const uint64_t e = t[table_index(va, Level(l))];
        if (!pte_present(e)) return false;
        if (l == 1) {
            out = e;
            return true;
        }
        if (!g.gpfn_of(pte_mfn(e), table)) return false;
    }
    return false;
}

// An instruction fetch at va (the NX checks of flag-range-basic and
// mprotect-semantics; docs/guest.md "Memory::fetch on bare metal"). Bytes at
// va are code only if someone put them there, so the probe puts its own: a
// `ret` at va's offset, written through the frame's physmap alias (data
// frames are writable there), then `call va`. First va is read, so the
// library's handler maps a demand-zero page as the sim's walker would (and a
// page x86 cannot read, it cannot execute either); its frame comes from a
// walk of the tables. When the alias is not writable (a page table, a frame
// the hypervisor holds) the probe cannot run: false, and the test records an
// ERROR, since that false is no NX result. Like a fetch it sets A and never D:
// a D the write put on the alias's entry is taken off again (with an INVLPG,
// so no TLB keeps the entry dirty) — va's own entry when va is the alias.
// The byte is back before it returns; while the probe runs another vCPU may
// see it, and must not write that byte (tests probe pages nobody writes
// meanwhile). The D taken off the alias is read, then written by
// update_va_mapping: a change of that physmap entry by another vCPU in
// between would be lost (the library changes physmap entries only when a
// frame becomes or stops being a page table, never a frame being probed). Probes of one
// page take turns (one must never call a byte another has just put back);
// a lock per page hash, so vCPUs probing the same pages in the same order
// follow each other instead of all waiting for one.
SpinLock g_fetch_locks[64];

bool XenpvCpu::fetch(Va va)
{
    uint64_t e, ae, word;
    Gpfn gpfn;
    if (!xenpv_load(va.v, &e) || !leaf_entry(va, e) || !rt::guest().gpfn_of(pte_mfn(e), gpfn)) return false;
    const Va alias = rt::guest().va(gpfn) + (va.v & (kPageSize - 1));
    const uint64_t at = alias.v & ~7ull;
    const unsigned shift = unsigned(alias.v & 7) * 8;
    SpinGuard turn(rt::this_cpu(), g_fetch_locks[(at >> kPageShift) % 64]);
    // A page the probe cannot patch is not known to be non-executable: an
    // ERROR, so no NX check passes without having been made.
    if (!leaf_entry(alias, ae) || !(ae & pte::RW) || !xenpv_load(at, &word)) {
        rt::error("xenpv: no fetch probe possible at %#llx (its frame is not writable through the physmap)",
                  (unsigned long long)va.v);
        return false;
    }
    const uint64_t patched = (word & ~(0xffull << shift)) | (0xc3ull << shift);
    uint64_t seen = word;
    if (xenpv_cmpxchg(at, &seen, patched) != 3) return false;
    // Cross-modifying code: a serialising instruction between the write and
    // the fetch (Intel SDM "Handling Self- and Cross-Modifying Code").
    unsigned a = 0, b, c, d;
    asm volatile("cpuid" : "+a"(a), "=b"(b), "=c"(c), "=d"(d) :: "memory");
    const bool ran = xenpv_fetch(va.v);
    // Only the byte goes back: a store to the word's other bytes meanwhile stays.
    for (seen = patched; ((seen >> shift) & 0xff) == 0xc3;) {
        const uint64_t back = (seen & ~(0xffull << shift)) | (word & (0xffull << shift));
        if (xenpv_cmpxchg(at, &seen, back) != 1) break;   // 3: put back; 0: faulted
    }
    uint64_t now;
    if (!(ae & pte::D) && leaf_entry(alias, now) && (now & pte::D))
        pvmmu::xenpv::hypercall(__HYPERVISOR_update_va_mapping, at & ~(kPageSize - 1), now & ~pte::D,
                                UVMF_INVLPG | UVMF_LOCAL);
    return ran;
}

struct alignas(kStackSize) Stack {
    Cpu* cpu;
    uint8_t bytes[kStackSize - sizeof(Cpu*)];
};
Stack g_stacks[kMaxXenpvVcpus];
XenpvCpu g_plat[kMaxXenpvVcpus];
alignas(Cpu) unsigned char g_cpu_storage[kMaxXenpvVcpus][sizeof(Cpu)];

const start_info_t* g_si;
BootInfo g_boot;
pvmmu_facts g_facts;   // PVMMUOP_facts, asked for once at boot (they never change)
bool g_have_facts;     // false: no pvmmu_op (Xen)

// The registers xenpv_page_fault saved, then the rest of the bounce frame.
struct FaultFrame {
    uint64_t r15, r14, r13, r12, r11, r10, r9, r8, rbp, rdi, rsi, rdx, rcx, rbx, rax;
    uint64_t error, rip, cs, rflags, rsp, ss;
};

// The console. A domU of Xen's toolstack has no console_io (a non-debug Xen
// refuses it from any domain but dom0): it writes to its console ring
// (start_info.console.domU), which xenconsoled in dom0 reads when the event
// channel tells it to. dom0, and any domain of pvmmu (which says so by
// answering pvmmu_op), keep console_io: it reaches the serial line at once,
// with no reader to wait for.
union alignas(kPageSize) ConsolePage {
    xencons_interface ring;
    uint8_t bytes[kPageSize];
} g_console_page;
static_assert(sizeof(ConsolePage) == kPageSize);
volatile xencons_interface* g_ring;   // nullptr: console_io
evtchn_port_t g_console_port;
// The writers of the ring take turns: it has one producer index. Not the
// library's SpinLock, which needs a Cpu (the first lines may come before any).
std::atomic_flag g_console_busy = ATOMIC_FLAG_INIT;

void console_notify()
{
    evtchn_send_t send{g_console_port};
    hypercall(__HYPERVISOR_event_channel_op, EVTCHNOP_send, uint64_t(&send));
}

// Bytes into the ring's `out` half, as many as fit at a time; while it is
// full the reader is told again and the vCPU yields to it.
void ring_write(const char* s, size_t n)
{
    volatile xencons_interface& r = *g_ring;
    while (n) {
        const XENCONS_RING_IDX cons = r.out_cons;
        XENCONS_RING_IDX prod = r.out_prod;
        __atomic_thread_fence(__ATOMIC_ACQUIRE);   // read out_cons before reusing its bytes
        size_t room = sizeof(r.out) - (prod - cons);
        if (room == 0) {
            console_notify();
            hypercall(__HYPERVISOR_sched_op, SCHEDOP_yield, 0);
            continue;
        }
        for (; room && n; --room, --n) r.out[MASK_XENCONS_IDX(prod++, r.out)] = *s++;
        __atomic_thread_fence(__ATOMIC_RELEASE);   // the bytes before the index that publishes them
        r.out_prod = prod;
        console_notify();
    }
}

// Before the domain ends, the reader must have taken every byte: a domain
// that is gone has no ring left to read. Bounded, so a dom0 with no
// xenconsoled does not keep the domain from ending.
void ring_drain()
{
    for (unsigned i = 0; g_ring && g_ring->out_cons != g_ring->out_prod && i < 100000; ++i) {
        console_notify();
        hypercall(__HYPERVISOR_sched_op, SCHEDOP_yield, 0);
    }
}

// The ring where the domain is a domU of Xen: its frame mapped over a page of
// the image's own (as shared_info is), so nothing depends on where the
// builder put it. false when it cannot be mapped (console_io stays).
bool use_console_ring(const start_info_t& si)
{
    pvmmu_facts facts;
    if ((si.flags & SIF_INITDOMAIN) || si.console.domU.mfn == 0 ||
        hypercall(__HYPERVISOR_pvmmu_op, PVMMUOP_facts, uint64_t(&facts)) == 0)
        return false;
    const uint64_t e = (si.console.domU.mfn << kPageShift) | pte::P | pte::RW | pte::US | pte::A | pte::D | pte::NX;
    if (hypercall(__HYPERVISOR_update_va_mapping, uint64_t(&g_console_page), e, UVMF_INVLPG | UVMF_LOCAL) != 0)
        return false;
    g_console_port = si.console.domU.evtchn;
    g_ring = &g_console_page.ring;
    return true;
}

void shutdown(unsigned reason)
{
    ring_drain();
    sched_shutdown_t s{reason};
    hypercall(__HYPERVISOR_sched_op, SCHEDOP_shutdown, uint64_t(&s));
}

Cpu& make_cpu(unsigned id)
{
    Cpu* c = new (g_cpu_storage[id]) Cpu(g_plat[id], g_plat[id], id);
    g_stacks[id].cpu = c;
    return *c;
}

uint64_t stack_top(unsigned id) { return uint64_t(&g_stacks[id]) + kStackSize; }

// start_info as the library's BootInfo. Both hypervisors map gpfn g at
// VIRT_BASE + g * 4 KiB, the L4 at pt_base first of the builder's tables;
// pvmmu maps every gpfn and gives contiguous frames, Xen maps its boot region
// only and gives frames from anywhere (the library maps the rest, and
// inverts the P2M with the M2P Xen maps read-only for every PV guest).
BootInfo boot_info(const start_info_t& si, uint64_t initial_sp)
{
    const uint64_t physmap = XENPV_VIRT_BASE;
    xen_machphys_mapping_t m2p{};
    const bool have_m2p = hypercall(__HYPERVISOR_memory_op, XENMEM_machphys_mapping, uint64_t(&m2p)) == 0;
    return BootInfo{
        .physmap = Va{physmap},
        .p2m = reinterpret_cast<const uint64_t*>(si.mfn_list),
        .m2p = have_m2p ? reinterpret_cast<const uint64_t*>(m2p.v_start) : nullptr,
        .m2p_entries = have_m2p ? m2p.max_mfn + 1 : 0,
        .nr_frames = si.nr_pages,
        .l4 = Gpfn{(si.pt_base - physmap) >> kPageShift},
        .first_pt = (si.pt_base - physmap) >> kPageShift,
        .nr_pt_frames = si.nr_pt_frames,
        .first_free = (initial_sp - physmap) >> kPageShift,
        .nr_vcpus = 1,
        .tlb_caches_invalid = false,   // x86 TLBs hold no not-present translation
        .coherent_walker = true,
    };
}

// shared_info, mapped by the guest as on Xen (where it is a frame of the
// hypervisor's, mapped nowhere yet) over a page of its own. On pvmmu it is
// a frame of the domain's, mapped in the physmap too.
// A whole page of its own: nothing else may share the page whose mapping
// changes.
union alignas(kPageSize) SharedPage {
    shared_info_t info;
    uint8_t bytes[kPageSize];
} g_shared_page;
static_assert(sizeof(SharedPage) == kPageSize);
shared_info_t& g_shared = g_shared_page.info;

bool map_shared_info(const start_info_t& si)
{
    const uint64_t e = (si.shared_info & pte::ADDR) | pte::P | pte::RW | pte::US | pte::A | pte::D | pte::NX;
    return hypercall(__HYPERVISOR_update_va_mapping, uint64_t(&g_shared_page), e, UVMF_INVLPG | UVMF_LOCAL) == 0;
}

// Every vCPU's trap table: page faults go to entry.S; any other exception
// has no handler, so the hypervisor crashes the domain and says why. The
// boot vCPU sets it; a secondary one starts with it (its context's
// trap_ctxt, start_secondary), as Linux brings up its CPUs.
trap_info_t page_fault_trap() { return {14, 0, FLAT_RING3_CS64, uint64_t(&xenpv_page_fault)}; }

void set_traps()
{
    trap_info_t traps[] = {page_fault_trap(), {0, 0, 0, 0}};
    if (hypercall(__HYPERVISOR_set_trap_table, uint64_t(traps)) != 0) {
        rt::print("xenpv: set_trap_table failed");
        rt::print("Test result: ERROR");
        shutdown(SHUTDOWN_crash);
    }
}

// The vCPUs the domain has: VCPUOP_is_up answers for each that exists.
unsigned count_vcpus()
{
    unsigned n = 1;
    while (n < kMaxXenpvVcpus && hypercall(__HYPERVISOR_vcpu_op, VCPUOP_is_up, n, 0) >= 0) ++n;
    return n;
}

[[noreturn]] void secondary_cpu(unsigned id);

// vCPU `id` starts in secondary_cpu(id) on its own stack, on the boot L4
// (gpfn 0); the runtime moves it to the test's address space later.
bool start_secondary(unsigned id)
{
    static vcpu_guest_context_t ctx;   // 5 KiB: not on a 16 KiB stack
    ctx = vcpu_guest_context_t{};
    ctx.user_regs.rip = uint64_t(&secondary_cpu);
    ctx.user_regs.rsp = stack_top(id) - 8;   // as after a call: the ABI's alignment
    ctx.user_regs.rdi = id;
    // What Xen also needs (pvmmu takes them as given): a kernel-mode start on
    // the flat kernel selectors, the kernel stack for a return from user
    // mode. Not VGCF_online: on Xen it clears the down flag, so VCPUOP_up
    // would find the vCPU up and wake nothing.
    ctx.flags = VGCF_in_kernel;
    ctx.user_regs.cs = FLAT_KERNEL_CS64;
    ctx.user_regs.ss = FLAT_KERNEL_SS;
    ctx.user_regs.rflags = 0x200;   // IF: events may come
    ctx.kernel_ss = FLAT_KERNEL_SS;
    ctx.kernel_sp = ctx.user_regs.rsp;
    ctx.ctrlreg[3] = xen_pfn_to_cr3(g_boot.p2m[g_boot.l4.v]);   // the boot L4 (the library is not up yet)
    ctx.trap_ctxt[14] = page_fault_trap();   // no set_trap_table of its own (set_traps)
    make_cpu(id);
    return hypercall(__HYPERVISOR_vcpu_op, VCPUOP_initialise, id, uint64_t(&ctx)) == 0 &&
           hypercall(__HYPERVISOR_vcpu_op, VCPUOP_up, id, 0) == 0;
}

[[noreturn]] void secondary_cpu(unsigned id)
{
    rt::secondary_main(*g_stacks[id].cpu);
    hypercall(__HYPERVISOR_vcpu_op, VCPUOP_down, id, 0);
    for (;;) {
    }
}

[[noreturn]] void boot_cpu()
{
    set_traps();
    Cpu& c = make_cpu(0);
    g_boot.nr_vcpus = count_vcpus();
    g_have_facts = hypercall(__HYPERVISOR_pvmmu_op, PVMMUOP_facts, uint64_t(&g_facts)) == 0;
    if (!g_have_facts) g_facts.peer_domid = DOMID_INVALID;
    for (unsigned i = 1; i < g_boot.nr_vcpus; ++i) {
        if (!start_secondary(i)) {
            rt::print("xenpv: vCPU %u did not start", i);
            rt::print("Test result: ERROR");
            shutdown(SHUTDOWN_crash);
        }
    }
    rt::boot_main(c, g_boot);
    shutdown(SHUTDOWN_poweroff);
    for (;;) {
    }
}

} // namespace

} // namespace pvmmu::guest::xenpv

using namespace pvmmu::guest;
using namespace pvmmu::guest::xenpv;

// From head.S: start_info and the RSP the hypervisor gave (the top of the
// boot structures: every gpfn below it is taken).
extern "C" [[noreturn]] void xenpv_start(const start_info_t* si, uint64_t initial_sp)
{
    for (auto* f = __init_array_start; f != __init_array_end; ++f) (*f)();
    g_si = si;
    use_console_ring(*si);
    if (!map_shared_info(*si)) {
        rt::print("xenpv: shared_info could not be mapped");
        rt::print("Test result: ERROR");
        shutdown(SHUTDOWN_crash);
    }
    g_boot = boot_info(*si, initial_sp);
    xenpv_switch_stack(stack_top(0), boot_cpu);
}

// A page fault (entry.S): the library's handler first (spurious faults,
// demand-zero pages); if it gives up, an access of entry.S's returns false;
// anything else is a bug of the guest program and crashes the domain.
extern "C" void xenpv_fault(FaultFrame* f)
{
    Cpu& c = rt::this_cpu();
    const uint64_t va = g_shared.vcpu_info[c.id].arch.cr2;
    // Page-fault error code ("Page-Fault Exceptions"): P, W/R, I/D.
    const FaultInfo fi{Va{va}, (f->error & 16) ? Access::Exec : (f->error & 2) ? Access::Write : Access::Read,
                       (f->error & 1) != 0};
    if (rt::fault(c, fi)) return;
    if ((f->error & 16) && f->rip == va && *reinterpret_cast<const uint64_t*>(f->rsp) == uint64_t(&xenpv_fetch_ret)) {
        f->rip = uint64_t(&xenpv_fetch_ret);   // the probe's `call va` faulted (entry.S)
        f->rsp += 8;
        f->rax = 0;
        return;
    }
    for (const uint64_t* e = xenpv_extable; e != xenpv_extable_end; e += 2) {
        if (f->rip == e[0]) {
            f->rip = e[1];
            return;
        }
    }
    rt::print("xenpv: vCPU %u: unhandled page fault at rip %#llx, address %#llx, error %#llx", c.id,
              (unsigned long long)f->rip, (unsigned long long)va, (unsigned long long)f->error);
    rt::print("Test result: FAILURE");
    shutdown(SHUTDOWN_crash);
}

extern "C" void __cxa_pure_virtual() { shutdown(SHUTDOWN_crash); }

// --- The platform's half of the runtime (guest/runtime.h) ---------------------------

namespace pvmmu::guest::rt {

void console_write(const char* s, size_t n)
{
    if (!g_ring) {
        hypercall(__HYPERVISOR_console_io, CONSOLEIO_write, n, uint64_t(s));
        return;
    }
    while (g_console_busy.test_and_set(std::memory_order_acquire)) asm volatile("pause");
    ring_write(s, n);
    g_console_busy.clear(std::memory_order_release);
}

Cpu& this_cpu()
{
    uint64_t sp;
    asm volatile("mov %%rsp, %0" : "=r"(sp));
    return *reinterpret_cast<Stack*>(sp & ~(kStackSize - 1))->cpu;
}

unsigned nr_vcpus() { return g_boot.nr_vcpus; }

// What only the hypervisor knows comes through pvmmu_op (docs/abi.md §10).
// It counts no TLB misses (hardware does not tell it: tlb_misses_counted stays
// false), nor cleans (the x86 walker is coherent: 0).
bool platform_counters(unsigned vcpu, PlatformCounters& out)
{
    pvmmu_vcpu_counters c;
    if (hypercall(__HYPERVISOR_pvmmu_op, PVMMUOP_vcpu_counters, vcpu, uint64_t(&c)) != 0) return false;
    out = PlatformCounters{.faults = c.faults,
                           .flush_all = c.flush_all,
                           .flush_page = c.flush_page,
                           .shootdowns_sent = c.shootdowns_sent,
                           .shootdowns_served = c.shootdowns_served};
    return true;
}

bool foreign_domain(ForeignDomain& out)
{
    if (g_facts.peer_domid == DOMID_INVALID) return false;
    out = ForeignDomain{g_facts.peer_domid, Mfn{g_facts.peer_first_mfn}, g_facts.peer_nr_frames};
    return true;
}
bool pvmmu_op_available() { return g_have_facts; }
Mfn hypervisor_frame() { return Mfn{g_facts.hypervisor_mfn}; }
Mfn io_frame() { return Mfn{g_facts.io_mfn}; }
bool deny(uint32_t bits) { return hypercall(__HYPERVISOR_pvmmu_op, PVMMUOP_deny, bits) == 0; }
bool hypervisor_install_retries(uint64_t& out)
{
    return hypercall(__HYPERVISOR_pvmmu_op, PVMMUOP_install_retries, uint64_t(&out)) == 0;
}
// Benchmarking only: a lock cmpxchg on the entry's alias in the unsafe native
// window, which the hypervisor maps only for a domain started with the module
// word unsafe-native-pt (docs/abi.md §10). Anywhere else the window is not
// mapped, the access faults, and the answer is a refusal.
bool native_pte_cmpxchg(Maddr entry, uint64_t& expected, uint64_t desired, bool& swapped)
{
    Gpfn g;
    if ((entry.v & 7) || !guest().gpfn_of(Mfn{entry.v >> kPageShift}, g)) return false;
    const uint64_t at = (g.v << kPageShift) + (entry.v & (kPageSize - 1));
    return this_cpu().mem.cmpxchg(Va{PVMMU_UNSAFE_NATIVE_WINDOW + at}, expected, desired, swapped);
}
// Nanoseconds since the hypervisor booted, from this vCPU's vcpu_time_info
// in shared_info (docs/abi.md §10 "Time"), as Xen documents it: system_time
// plus the TSC's advance since tsc_timestamp, shifted by tsc_shift and scaled
// by tsc_to_system_mul / 2^32. Read while version is even and unchanged.
uint64_t now_ns()
{
    const volatile vcpu_time_info& t = g_shared.vcpu_info[this_cpu().id].time;
    uint32_t version;
    uint64_t tsc_timestamp, system_time, tsc;
    uint32_t mul;
    int8_t shift;
    do {
        version = t.version;
        asm volatile("" ::: "memory");
        tsc_timestamp = t.tsc_timestamp;
        system_time = t.system_time;
        mul = t.tsc_to_system_mul;
        shift = t.tsc_shift;
        uint32_t lo, hi;
        asm volatile("lfence; rdtsc" : "=a"(lo), "=d"(hi) :: "memory");
        tsc = (uint64_t(hi) << 32) | lo;
        asm volatile("" ::: "memory");
    } while ((version & 1) || version != t.version);
    uint64_t delta = tsc - tsc_timestamp;
    delta = shift >= 0 ? delta << shift : delta >> -shift;
    return system_time + uint64_t((unsigned __int128)delta * mul >> 32);
}

// The words of start_info's command line (`key=value …`), split once.
const char* platform_arg(unsigned i)
{
    static char line[MAX_GUEST_CMDLINE];
    static const char* words[MAX_GUEST_CMDLINE / 2];
    static unsigned nr_words = ~0u;
    if (nr_words == ~0u) {
        nr_words = 0;
        for (unsigned k = 0; k + 1 < MAX_GUEST_CMDLINE && g_si->cmd_line[k]; ++k) line[k] = char(g_si->cmd_line[k]);
        for (unsigned k = 0; line[k]; ++k) {
            if (line[k] == ' ') line[k] = 0;
            else if (k == 0 || line[k - 1] == 0) words[nr_words++] = &line[k];
        }
    }
    return i < nr_words ? words[i] : nullptr;
}

} // namespace pvmmu::guest::rt
