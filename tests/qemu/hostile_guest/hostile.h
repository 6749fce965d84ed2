// The hostile guest (docs/security.md §7.10): a guest kernel that, from a seed,
// makes random hypercalls with random and boundary arguments, executes random
// privileged and faulting instructions, and takes its exceptions through
// random handlers, asking the hypervisor every N operations to check its
// invariants. It must stay alive through all of it, so what it does is
// random only where the result cannot hurt it (setup.cc says what it keeps
// out of reach of its own requests).
#pragma once

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <pvmmu/abi.h>
#include <xen/io/console.h>

#include "hypercall.h"

#define HIDDEN __attribute__((visibility("hidden")))   // RIP-relative: no GOT in a static image

namespace hostile {

using pvmmu::xenpv::hypercall;

constexpr uint64_t kPage = 4096;

// Page-table entry bits ("Paging", SDM Vol. 3A, Table 4-19).
namespace pte {
constexpr uint64_t P = 1, RW = 2, US = 4, PWT = 8, PCD = 16, A = 32, D = 64, PS = 128, G = 256;
constexpr uint64_t NX = 1ull << 63, PK = 0xfull << 59, ADDR = 0x000ffffffffff000ull;
} // namespace pte

// xoshiro256** seeded by splitmix64: the run is a function of the seed.
class Rng {
public:
    void seed(uint64_t s);
    uint64_t next();
    uint64_t below(uint64_t n) { return n ? next() % n : 0; }
    bool one_in(unsigned n) { return below(n) == 0; }
    // One of a list, equally likely.
    template <size_t N>
    uint64_t of(const uint64_t (&v)[N]) { return v[below(N)]; }

private:
    uint64_t s_[4] = {};
};
extern Rng rng;

// The domain's memory and what the guest keeps where (setup.cc). gpfn g is at
// physmap + g * 4 KiB, machine frame first_mfn + g.
struct Layout {
    const start_info_t* si = nullptr;
    shared_info_t* shared = nullptr;
    xencons_interface* ring = nullptr;
    uint64_t physmap = 0, first_mfn = 0, nr_pages = 0, nr_pt = 0;
    uint64_t first_free = 0;   // the first gpfn above the boot stack
    uint64_t text = 0, hole_a = 0, region_a = 0, hole_b = 0;   // pool A: region_a .. +15, but hole_b
    uint64_t pool_b = 0;       // 16 frames, read-only in the physmap
    uint64_t l3 = 0, l2 = 0, code_l1 = 0, scratch_l1 = 0, code[2] = {};
    uint64_t ldt = 0;          // a page of descriptors, read-only in the physmap: MMUEXT_SET_LDT takes it
    pvmmu_facts facts{};

    uint64_t va(uint64_t gpfn) const { return physmap + gpfn * kPage; }
    uint64_t mfn(uint64_t gpfn) const { return first_mfn + gpfn; }
    uint64_t maddr(uint64_t gpfn) const { return mfn(gpfn) * kPage; }
    bool own(uint64_t m) const { return m >= first_mfn && m - first_mfn < nr_pages; }
};
extern Layout g;

constexpr unsigned kRegionA = 16, kPoolB = 16;
// Slot 255 of the L4, the last of the lower half, is the guest's playground
// (setup.cc): its L3 entry 511 and L2 entry 511 hold the code pages at
// kCodeVa (the last 8 KiB below the canonical boundary), out of reach; every
// other address of the slot is what random update_va_mapping calls change.
constexpr uint64_t kSlot255 = 0x7f8000000000, kCodeVa = 0x7fffffffe000, kLowerEnd = 0x800000000000;
constexpr uint64_t kCodeRegion = 0x7fffffe00000;   // L3 511, L2 511: 2 MiB, no random change

// --- output -------------------------------------------------------------------
// A console line in printf's format, as the shared engine reads it
// (lib/include/format/format.h lists the conversions); the compiler checks
// each call's arguments against its format.
__attribute__((format(printf, 1, 2))) void say(const char* fmt, ...);
__attribute__((format(printf, 1, 0))) void vsay(const char* fmt, va_list ap);
[[noreturn]] __attribute__((format(printf, 1, 2))) void fail(const char* fmt, ...);
// snprintf's contract, by the same engine.
__attribute__((format(printf, 3, 4))) int format(char* buf, size_t cap, const char* fmt, ...);

// --- the run ------------------------------------------------------------------
struct Options {
    uint64_t seed = 1, ops = 100000, time_s = 0, check_every = 1000, trace_from = ~0ull;
    uint64_t progress_every = 0;   // 0: every check_every * 10 operations
    bool edges = true;             // SYSCALL at the canonical boundary
};
extern Options opt;

struct Stats {
    uint64_t ops = 0, hypercalls = 0, probes = 0, traps = 0, checks = 0;
    uint64_t refused = 0;           // hypercalls that returned an error
    uint64_t by_vector[32] = {};
};
extern Stats stats;

// The operation under way, kept for the report of a failure (and printed
// as it starts from operation opt.trace_from on).
void note(const char* what, uint64_t a0 = 0, uint64_t a1 = 0, uint64_t a2 = 0, uint64_t a3 = 0, uint64_t a4 = 0,
          uint64_t a5 = 0);
void noted_result(int64_t rc);
void print_recent_ops();
// From trace=N on: fails, naming the operation, when it changed the guest's
// own tables, text, read-only data or layout (main.cc).
void check_after_op();

uint64_t now_ns();

// --- setup.cc: the memory the guest plays with ---------------------------------
void setup(const start_info_t* si, uint64_t initial_sp);
// The live tables (gpfns 0 .. nr_pt - 1) and the playground's protected
// entries, hashed; the guest compares it at every check.
uint64_t protected_hash();
void protected_snapshot();
void protected_diff();   // prints the entries that differ from the snapshot
// The guest's own text, read-only data, layout and options, hashed per page
// after setup; own_image_changed() compares, own_image_diff() says where.
void own_image_snapshot();
bool own_image_changed();
void own_image_diff();
extern uint8_t g_code_b[3 * kPage];   // two code pages and a hole (setup.cc)
uint64_t sealed_gpfn();   // the sealed page's frame (sealed.S): read-only, never drawn
// A pool A frame (region A but its hole), by index < kRegionA - 1.
uint64_t pool_a(unsigned i);
// Rewrites a pool B frame with random entries (made writable in the physmap
// for the time, when it is no page table); the random part of the tables.
void op_write_pool_b();

// --- args.cc: random arguments that cannot hurt the guest -----------------------
// An address a hypercall may read from or write to: into pool A with `room`
// bytes after it, or one the hypervisor must refuse (read-only, unmapped, in
// the hypervisor's slots, non-canonical, straddling a boundary).
uint64_t pick_pointer(uint64_t room);
// A pointer the hypervisor must refuse, or read only where what it reads is
// harmless as requests of any kind (the live tables, the code pages): never
// pool A, whose old contents — earlier arrays, copies of tables, the
// hypervisor's outputs — read as a request list could be anything. All
// `bytes` from it (the array it stands for) are refused or read-only alike:
// the hypervisor stops at the first element, which it refuses or whose
// result it cannot write back, as long as that element is whole in there.
uint64_t pick_refused_pointer(uint64_t bytes);
// A place for an array the guest fills now: pool A, or 0 when none is left.
uint64_t alloc_a(uint64_t bytes);
// A count for an array of n elements of `elem` bytes at `list` (0: none):
// mostly n, else 0, a few more, huge or with high bits; past n reads zeros.
uint64_t pick_count(uint64_t n, uint64_t list, uint64_t elem);
// An array of `bytes` the guest fills now (`list`, in pool A), or (1 in 8,
// `list` 0) a pointer the hypervisor must refuse or may only read; returns
// the pointer to pass.
uint64_t list_or_bad(uint64_t bytes, uint64_t& list);
void alloc_reset();
// Whether [va, va + bytes) meets the part of pool A this operation's arrays
// were allocated from: from its first array to the end of that run of pages,
// which a count beyond an array reads too.
bool in_op_arrays(uint64_t va, uint64_t bytes);
uint64_t op_arrays_end();
// Zeroes pool A from va to the end of its run of mapped pages, so a count
// beyond an array reads zeros (a request naming machine address 0, refused),
// never an older array's bytes.
void zero_after(uint64_t va);
// What a frame is drawn for: an entry's value (any level), a request's target,
// a pin, an unpin (never the live L4), a base pointer (the live L4 or frames
// that cannot be one), a user base pointer, a GDT frame.
enum class Use { PteVal, Entry, Pin, Unpin, Baseptr, UserBaseptr, Gdt };
uint64_t pick_mfn(Use u);
uint64_t pick_pte(unsigned level);
// A machine address for update_descriptor: in a frame the guest may lose
// (pool A or B), a live table (refused), a foreign frame, or anything;
// mostly 8-byte aligned.
uint64_t pick_descriptor_maddr();
// The machine address of an entry a request may change, and the level of
// the table it is most likely in (for a fitting value).
uint64_t pick_entry(unsigned& level);
uint64_t pick_flag_range();
uint64_t pick_uvm_va();  // an address update_va_mapping may change (slot 255) or must refuse
uint64_t pick_bad_va();  // unmapped, hypervisor, non-canonical, top of memory
uint64_t pick_any_va();  // any of the above and the guest's own (for flushes)

// --- hypercalls.cc ------------------------------------------------------------
struct Call {
    uint64_t nr = 0;
    uint64_t a[6] = {};
    bool unknown = false;   // must be -ENOSYS
    bool positive = false;  // may return a positive value
    bool exact = false;     // must return `want`
    int64_t want = 0;
    const char* name = "";
};
// Any call, by the guest's rules; no set_trap_table when an exception may
// follow before the guest installs its table again (a SYSCALL of its own).
Call make_call(bool traps_follow);
// The DPL of the guest's trap-table entry for `vector` (0 above 31).
unsigned trap_dpl(unsigned vector);
// Whether install_traps gave vector (above 31) an entry: DPL 0, vector 0's stub.
bool trap_extra(unsigned vector);
Call make_core_call(unsigned depth);   // what a multicall may hold
// --- grants.cc ----------------------------------------------------------------
Call make_grant_call();   // grant_table_op, every sub-op (docs/abi.md §12.7)
void op_hypercall();
// Checks a hypercall's result; what came back by a raw SYSCALL too.
void check_result(const Call& c, int64_t rc);
// hostile_raw_nr / hostile_raw_args for the snippets that SYSCALL themselves.
void load_raw(const Call& c);
void print_call_stats();   // calls and successes per hypercall
// The last make_call()'s call ran (or not) and its result was lost (a SYSCALL
// that came back to a trap): what it may have changed is assumed changed.
void result_lost();

// --- traps.cc -----------------------------------------------------------------
// Installs a full trap table, each vector's handler of a random variant.
void install_traps();
void traps_unknown();   // a set_trap_table call may have changed it
// Runs a snippet under a probe; the result says what trapped.
struct ProbeResult {
    uint64_t rax = 0;
    unsigned traps = 0;
    uint32_t vectors = 0;     // bit v: vector v was seen
    unsigned vector = 0;      // the first
    uint64_t error = 0, rip = 0, cr2 = 0;
    uint64_t cs = 0, frame = 0;   // the first's frame CS, and where its handler's registers lay
};
ProbeResult probe(const void* fn, const char* at, const char* past, uint64_t a0 = 0, uint64_t a1 = 0,
                  uint64_t a2 = 0, uint64_t a3 = 0, unsigned tf_steps = 0);
void restore_segments();
// --- user.cc: guest user mode ---------------------------------------------------
void user_setup();   // in setup(), before the tables are hashed
// SYSCALL in user mode without a syscall callback: the guest's #UD (user.cc),
// in setup(), after the trap table.
void user_no_callback_check();
// Runs a snippet in user mode with arguments a (user.cc), checking where its
// entries back to the kernel arrived.
ProbeResult user_probe(const char* fn, const char* at, const char* past, const uint64_t (&a)[4]);
// --- instructions.cc ------------------------------------------------------------
void op_instruction();
void op_boundary_syscall();
void op_iret();
void op_user_instruction();

} // namespace hostile

extern "C" {
HIDDEN extern char __init_array_start[];   // the start of .data (guest/platform/xenpv/xenpv.ld)
// The sealed page (sealed.S): a hypercall and the check of the image after it.
HIDDEN extern char hostile_sealed_page[];
HIDDEN extern uint64_t hostile_sealed_ref;
HIDDEN uint64_t hostile_sealed_hash();
HIDDEN long hostile_sealed_hypercall(uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4, uint64_t nr,
                                     uint64_t op);
[[noreturn]] HIDDEN void hostile_image_broken(uint64_t op);
HIDDEN extern uint64_t hostile_raw_nr, hostile_raw_args[6];
HIDDEN extern uint64_t hostile_iret_via;
HIDDEN extern char hostile_probe_resume[];
}
