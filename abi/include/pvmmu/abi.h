/*
 * pvmmu public ABI: Xen's public headers (from Debian's libxen-dev, never copied
 * into this tree) plus pvmmu's extensions to mmu_update and feature discovery.
 * Usable from C and C++, hosted and freestanding. See docs/abi.md and docs/design.md §3.
 */
#ifndef PVMMU_ABI_H
#define PVMMU_ABI_H

#include <stdint.h>

#ifndef __XEN_INTERFACE_VERSION__
#define __XEN_INTERFACE_VERSION__ 0x00040e00 /* Xen 4.14+, what libxen-dev 4.17 calls latest */
#endif
/* A Xen header included first has already fixed the version, to 0 when no one
 * set it: that picks the compat ABI (sched_op 6, another vcpumask) in silence. */
#if __XEN_INTERFACE_VERSION__ < 0x00040e00
#error "include <pvmmu/abi.h> before any Xen public header"
#endif

#include <xen/xen.h>
#include <xen/errno.h>
#include <xen/features.h>
#include <xen/version.h>
#include <xen/sched.h>
#include <xen/vcpu.h>
#include <xen/callback.h>
#include <xen/event_channel.h>
#include <xen/memory.h>

/* --- mmu_update commands (docs/design.md §3): the command is ptr & 7 on x86-64. ------ */

#define PVMMU_MMU_CMD_MASK 7u

/* Checked atomic write; installs val | (current & (A|D)) at the instant of the
 * install. The same number and meaning as Xen's MMU_PT_UPDATE_PRESERVE_AD. */
#define MMU_ATOMIC_PT_UPDATE MMU_PT_UPDATE_PRESERVE_AD

/* Range flag update of up to 1023 entries of one L1 page table. It is 4, not the
 * seed's 3, because 3 is Xen's MMU_PT_UPDATE_NO_TRANSLATE upstream. */
#define MMU_FLAG_RANGE_UPDATE 4

/* Feature bit (XENVER_get_features, submap 0) that advertises
 * MMU_FLAG_RANGE_UPDATE. Xen assigns bits upward from 0 (17 is its highest in
 * 4.17); pvmmu takes the top bit of submap 0 so the two cannot meet soon. */
#define PVMMU_FEAT_flag_range_update 31

/* Benchmarking only, UNSAFE (docs/abi.md §10 "Unsafe native page tables"): a
 * bare-metal domain whose module string holds the word `unsafe-native-pt`
 * finds every frame it owns, its page tables included, user-writable at
 * PVMMU_UNSAFE_NATIVE_WINDOW + (machine address - its first frame's machine
 * address). L4 slot 271, the last of Xen's HYPERVISOR_VIRT_START..END. */
#define PVMMU_UNSAFE_NATIVE_WINDOW 0xFFFF878000000000ull

/* Bits 63:32 of the count argument of mmu_update are never a count: Xen and pvmmu
 * use bit 31 to mark a preempted batch (continuation); see docs/abi.md. */
#define PVMMU_MMU_UPDATE_PREEMPTED 0x80000000u

/*
 * MMU_FLAG_RANGE_UPDATE val word (docs/design.md §3 table):
 *   11:0  mask for PTE bits 11:0      (1 = replace)
 *   23:12 mask for PTE bits 63:52
 *   35:24 new PTE bits 11:0           (where the mask is 1)
 *   47:36 new PTE bits 63:52
 *   57:48 count of entries, 0..1023
 *   63:58 must be zero
 */
#define PVMMU_FR_MASK_LO_SHIFT 0
#define PVMMU_FR_MASK_HI_SHIFT 12
#define PVMMU_FR_NEW_LO_SHIFT 24
#define PVMMU_FR_NEW_HI_SHIFT 36
#define PVMMU_FR_COUNT_SHIFT 48
#define PVMMU_FR_FIELD_MASK 0xfffull   /* each 12-bit flag field            */
#define PVMMU_FR_COUNT_MASK 0x3ffull   /* 10-bit count                     */
#define PVMMU_FR_COUNT_MAX 1023u
#define PVMMU_FR_MBZ_MASK (~0ull << 58)
#define PVMMU_PTE_HI_SHIFT 52          /* PTE bits 63:52 map to the HI fields */
/* The PTE bits a FLAG_RANGE request can touch at all: 11:0 and 63:52. */
#define PVMMU_FR_PTE_FLAG_BITS (0xfffull | (0xfffull << PVMMU_PTE_HI_SHIFT))

/* --- pvmmu_op (docs/abi.md §10 "pvmmu_op"): pvmmu's one hypercall of its own. --
 * Xen leaves __HYPERVISOR_arch_0..7 to each architecture; x86 uses arch_0 (mca)
 * and arch_1 (paging_domctl_cont), and numbers are handed out upward, so pvmmu
 * takes the last one. pvmmu_op(cmd, a1, a2). */
#define __HYPERVISOR_pvmmu_op __HYPERVISOR_arch_7

/* (bits): deny more commands to the calling domain (PVMMU_DENY_*). A domain can
 * only add denials, never lift one. Unknown bits -EINVAL. */
#define PVMMUOP_deny 0
/* (vcpu, struct pvmmu_vcpu_counters *): what the hypervisor counted for one of
 * the calling domain's vCPUs. No such vCPU -EINVAL. */
#define PVMMUOP_vcpu_counters 1
/* (uint64_t *): rounds of the A/D-preserving install loops lost to a hardware
 * A/D update (machine-wide; -EPERM unless the caller is the only domain that
 * has run, so no domain learns another's count). */
#define PVMMUOP_install_retries 2
/* (struct pvmmu_facts *): the frames a test names (its peer's, the hypervisor's,
 * a device's). */
#define PVMMUOP_facts 3
/* (struct pvmmu_invariants * or NULL): runs the hypervisor's invariant checks
 * over the whole machine (the core's I1-I9 and its own page tables), with every
 * other CPU's hypercalls held back meanwhile, and returns how many violations
 * it found: 0 when every invariant holds. Only for a domain booted with the
 * module word `invariant-check` (a test facility: the check pauses the machine),
 * -EPERM otherwise; bad pointer -EFAULT (the check has run). */
#define PVMMUOP_check_invariants 4
/* (vcpu, struct pvmmu_vcpu_calls *): the calls one of the calling domain's
 * vCPUs made (a struct of its own, so that pvmmu_vcpu_counters' users keep
 * their layout). No such vCPU -EINVAL. */
#define PVMMUOP_vcpu_calls 5

/* Commands a policy can deny (the `deny=` module word and PVMMUOP_deny). */
#define PVMMU_DENY_MMU_NORMAL (1u << 0)        /* mmu_update cmd 0 */
#define PVMMU_DENY_MMU_ATOMIC (1u << 1)        /* cmd 2 */
#define PVMMU_DENY_FLAG_RANGE (1u << 2)        /* cmd 4 */
#define PVMMU_DENY_PIN (1u << 3)               /* MMUEXT_(UN)PIN_* */
#define PVMMU_DENY_TLB_FLUSH (1u << 4)         /* MMUEXT_TLB_FLUSH_* / INVLPG_* */
#define PVMMU_DENY_UPDATE_VA_MAPPING (1u << 5)
#define PVMMU_DENY_MULTICALL (1u << 6)
#define PVMMU_DENY_ALL 0x7fu

/* Events of one vCPU, counted by the hypervisor on the CPU the vCPU is pinned
 * to, and only for work the vCPU's own domain asked for. */
struct pvmmu_vcpu_counters {
    uint64_t faults;               /* page faults bounced to the vCPU */
    uint64_t flush_all, flush_page;   /* TLB flushes done on its CPU */
    uint64_t shootdowns_sent;      /* flush IPIs it sent */
    uint64_t shootdowns_served;    /* flush IPIs its CPU served */
    uint64_t halts;                /* HLTs its CPU ran while it was blocked (SCHEDOP_block, _poll) */
};

/* What one vCPU asked of the hypervisor, counted once per call on the CPU the
 * vCPU is pinned to (never per page-table entry). */
struct pvmmu_vcpu_calls {
    uint64_t hypercalls;           /* calls it made, each counted when it finishes */
    uint64_t continuations;        /* rounds a call was preempted and entered again */
    uint64_t multicalls;           /* multicall calls it made */
    uint64_t multicall_entries;    /* entries those multicalls ran */
    uint64_t mmu_updates;          /* mmu_update calls, direct or in a multicall */
    uint64_t mmu_update_requests;  /* the requests those calls handed in */
    uint64_t pt_writes;            /* page-table writes emulated ("writable page tables") */
};

struct pvmmu_facts {
    uint16_t peer_domid;           /* DOMID_INVALID: booted without `peer=` */
    uint16_t pad[3];
    uint64_t peer_first_mfn, peer_nr_frames;   /* its frames, machine-contiguous */
    uint64_t hypervisor_mfn;       /* a frame the hypervisor owns */
    uint64_t io_mfn;               /* a frame of device memory */
};

/* What PVMMUOP_check_invariants found. */
struct pvmmu_invariants {
    uint64_t core_violations;      /* the core's checker (core/invariants.h) */
    uint64_t hv_violations;        /* the hypervisor's own page tables and CPUs */
    uint64_t frames, tables, entries;   /* what the core's check covered */
};

#ifdef __cplusplus
namespace pvmmu::abi {

/* A decoded FLAG_RANGE val: mask and new bits are in PTE bit positions. */
struct FlagRange {
    uint64_t mask;   /* PTE bits to replace: a subset of PVMMU_FR_PTE_FLAG_BITS */
    uint64_t bits;   /* new values for those bits (already ANDed with mask)     */
    uint32_t count;  /* entries, 0..1023                                        */
};

/* PTE flag bits (subset of 11:0 and 63:52) -> the 24-bit packed field form. */
constexpr uint64_t pack_flags(uint64_t pte_bits)
{
    return (pte_bits & PVMMU_FR_FIELD_MASK) |
           (((pte_bits >> PVMMU_PTE_HI_SHIFT) & PVMMU_FR_FIELD_MASK) << 12);
}

constexpr uint64_t unpack_flags(uint64_t field24)
{
    return (field24 & PVMMU_FR_FIELD_MASK) |
           (((field24 >> 12) & PVMMU_FR_FIELD_MASK) << PVMMU_PTE_HI_SHIFT);
}

/* Encode; mask/bits outside 11:0 and 63:52 and counts above 1023 are dropped,
 * so check encodable() first when the inputs are not constants. */
constexpr uint64_t encode_flag_range(uint64_t mask, uint64_t bits, uint32_t count)
{
    return (pack_flags(mask) << PVMMU_FR_MASK_LO_SHIFT) |
           (pack_flags(bits & mask) << PVMMU_FR_NEW_LO_SHIFT) |
           ((uint64_t(count) & PVMMU_FR_COUNT_MASK) << PVMMU_FR_COUNT_SHIFT);
}

constexpr bool encodable(uint64_t mask, uint64_t bits, uint32_t count)
{
    return (mask & ~uint64_t(PVMMU_FR_PTE_FLAG_BITS)) == 0 &&
           (bits & ~mask) == 0 && count <= PVMMU_FR_COUNT_MAX;
}

constexpr bool flag_range_mbz_ok(uint64_t val) { return (val & PVMMU_FR_MBZ_MASK) == 0; }

/* Decode; the caller checks flag_range_mbz_ok() first (MBZ bits give -EINVAL). */
constexpr FlagRange decode_flag_range(uint64_t val)
{
    const uint64_t mask = unpack_flags(val >> PVMMU_FR_MASK_LO_SHIFT);
    const uint64_t bits = unpack_flags(val >> PVMMU_FR_NEW_LO_SHIFT) & mask;
    return FlagRange{mask, bits,
                     uint32_t((val >> PVMMU_FR_COUNT_SHIFT) & PVMMU_FR_COUNT_MASK)};
}

/* The layouts the ABI depends on (x86-64). */
static_assert(sizeof(mmu_update_t) == 16);
static_assert(sizeof(mmuext_op_t) == 24);
static_assert(sizeof(multicall_entry_t) == 64);
static_assert(sizeof(xen_feature_info_t) == 8);
static_assert(MMU_ATOMIC_PT_UPDATE == 2);
static_assert(sizeof(pvmmu_vcpu_counters) == 48 && sizeof(pvmmu_facts) == 40);
static_assert(sizeof(pvmmu_invariants) == 40);
static_assert(sizeof(pvmmu_vcpu_calls) == 56);
static_assert(__HYPERVISOR_pvmmu_op == 55);
static_assert(MMU_PT_UPDATE_NO_TRANSLATE == 3 && MMU_FLAG_RANGE_UPDATE == 4);
static_assert(PVMMU_FR_COUNT_SHIFT + 10 == 58, "count is bits 57:48, MBZ 63:58");
static_assert(PVMMU_FR_NEW_HI_SHIFT + 12 == PVMMU_FR_COUNT_SHIFT);

/* Round trips, proven at compile time. */
static_assert(decode_flag_range(encode_flag_range(0x2, 0x0, 512)).count == 512);
static_assert(decode_flag_range(encode_flag_range(1ull << 63, 1ull << 63, 1)).bits == 1ull << 63);
static_assert(decode_flag_range(encode_flag_range(0xfff, 0xa5a, 1023)).bits == 0xa5a);
static_assert(!encodable(1ull << 12, 0, 1) && !encodable(1, 0, 1024) && !encodable(1, 2, 1));
static_assert(!flag_range_mbz_ok(1ull << 58) && flag_range_mbz_ok(~0ull >> 6));

} /* namespace pvmmu::abi */
#else
_Static_assert(sizeof(mmu_update_t) == 16, "mmu_update_t is 16 bytes");
_Static_assert(sizeof(mmuext_op_t) == 24, "mmuext_op_t is 24 bytes");
_Static_assert(sizeof(multicall_entry_t) == 64, "multicall_entry_t is 64 bytes");

static inline uint64_t pvmmu_encode_flag_range(uint64_t mask, uint64_t bits, uint32_t count)
{
    uint64_t m = (mask & 0xfffull) | (((mask >> 52) & 0xfffull) << 12);
    uint64_t b = ((bits & mask) & 0xfffull) | ((((bits & mask) >> 52) & 0xfffull) << 12);
    return m | (b << PVMMU_FR_NEW_LO_SHIFT) | (((uint64_t)count & PVMMU_FR_COUNT_MASK) << PVMMU_FR_COUNT_SHIFT);
}
#endif

#endif /* PVMMU_ABI_H */
