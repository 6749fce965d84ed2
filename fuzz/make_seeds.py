#!/usr/bin/env python3
"""Writes the hand-made seed inputs of fuzz/corpus/.

Each seed is a small program in the harness's input language (fuzz/harness.cc:
every picker reads the bytes these helpers emit, in the same order), covering
one hypercall or one page-table life cycle, so libFuzzer starts from inputs that
already reach deep states. Regenerate after changing the harness's pickers:
    python3 fuzz/make_seeds.py && PVMMU_FUZZ_VERBOSE=1 build-fuzz/fuzz/hypercall_fuzzer fuzz/corpus/*
"""
import os
import struct
import sys

# --- the pickers' encodings (fuzz/harness.cc) ----------------------------------
def u16(v): return list(struct.pack("<H", v))
def u64(v): return list(struct.pack("<Q", v & (2**64 - 1)))

def own(g): return [0, g]                 # frame(): the caller's gpfn g
def own_pt(k): return [2, k]              # one of its initial tables (0 L4 .. 3 L1)
def other(g): return [3, g]               # the other domain's gpfn g
def xen(i): return [4, i]                 # hypervisor frame i
def io(i): return [5, i]                  # I/O frame i
def recent(k): return [9, k]              # a frame picked recently
def index(i): return u16(i)               # entry index < 512

# flags(): indexes into kCommon
LINK, RO, RWD, P_ONLY, P_RW, RO_NX, LINK_NX, NONE, NOT_PRESENT, PCD, PS, GLOBAL = range(12)
def flags(k): return [k]

def val_zero(): return [0]
def val_frame(f, fl): return [1] + f + flags(fl)
def val_own(g, fl): return [3, g] + flags(fl)
def val_link(f): return [5] + f
def val_raw(v): return [6] + u64(v)
def val_other_ro(g): return [8, g]

# flag_range_val(): mask index (kMasks), flags byte, count (kCounts index | 0x80), no MBZ
FR_RW, FR_P, FR_NX = 0, 1, 2
COUNTS = {0: 0, 1: 1, 2: 2, 16: 3, 511: 4, 512: 5, 513: 6, 1023: 7}
def val_fr(mask, fl, count, mbz_bit=None):   # mbz_bit: sets bit 58 + mbz_bit
    return [1, mask] + flags(fl) + [0x80 | COUNTS[count]] + ([1] if mbz_bit is None else [0, mbz_bit])

def ptr_in(f, i): return [0] + f + index(i)
def ptr_pte(g): return [3, g]             # the entry that maps the caller's gpfn g
def ptr_other_pte(g): return [5, g]
def ptr_upper(k, i): return [6, k] + index(i)   # k: 0 L4, 1 L3, 2 L2
def ptr_raw(v): return [7] + u64(v)

HOT = {0: 0, 2: 1, 4: 2, 1: 4}            # kHotCmds index of cmds 0, 2, 4, 1
def cmd(c): return [0, HOT[c]] if c in HOT else [9, c]

GOOD, NULL, BAD = [4], [0], [1]           # ptr_arg()
SELF = [0]                                # foreigndom(): DOMID_SELF
def dom(d):                               # foreigndom(): the caller (0) or the other (1), DOMID_IO (2)
    return [160 + d]

def op(code, dom_b=False, last_vcpu=False): return [code | (0x80 if dom_b else 0) | (0x40 if last_vcpu else 0)]

def mmu_req(c, ptr, val): return cmd(c) + ptr + val
def mmu_one(c, ptr, val, fd=SELF, **kw): return op(0, **kw) + mmu_req(c, ptr, val) + GOOD + fd
def mmu_batch(reqs, count_kind=[4], pdone_preset=0, **kw):
    return op(1, **kw) + [len(reqs) - 1] + sum(reqs, []) + count_kind + GOOD + [pdone_preset] + GOOD + SELF

EXT = {"pin1": 0, "pin2": 1, "pin3": 2, "pin4": 3, "unpin": 4, "base": 5, "flush_local": 6,
       "invlpg_local": 7, "flush_multi": 8, "invlpg_multi": 9, "flush_all": 10, "invlpg_all": 11,
       "user_base": 12, "set_ldt": 15, "flush_cache": 16, "bad14": 17, "bad21": 18}
def va_own(g): return [0, g, 1]
def vcpumask(k=0): return [1, k] + GOOD     # kMasks[k], a good pointer
def ext_op(name, arg):
    b = [0, EXT[name], 1]
    if name == "user_base": b += [1]
    return b + arg + vcpumask()
def ext_one(name, arg, **kw): return op(2, **kw) + ext_op(name, arg) + GOOD
def ext_batch(ops, **kw): return op(3, **kw) + [len(ops) - 1] + sum(ops, []) + [4] + GOOD + [0] + GOOD + SELF

UVMF = {"none": 0, "flush": 1, "invlpg": 2, "bad": 3}
def uva(va, val, kind="invlpg", target=0, **kw):   # target 0 local, 1 all, 2 a bitmap (append vcpumask())
    return op(4, **kw) + va + val + [UVMF[kind], target]
def xen_version(c, submap=0, **kw): return op(6, **kw) + [submap, 1, c] + GOOD
def guest_write(f, entries, **kw):
    return op(7, **kw) + f + [len(entries) - 1] + sum((index(i) + v for i, v in entries), [])
def guest_copy(to, frm, zero, **kw): return op(8, **kw) + to + frm + [1 if zero else 0]
def multicall(entries, extra=None, **kw):   # extra: nr = len + extra (the rest of the list reads as op 0)
    count = [4] if extra is None else [1, extra]
    return op(5, **kw) + [len(entries) - 1] + sum(entries, []) + GOOD + count
def mc_mmu_one(c, ptr, val): return [0] + mmu_req(c, ptr, val) + GOOD + SELF
def mc_xv(c): return [4, 0, 1, c] + GOOD
def mc_ext_one(name, arg): return [2, 1] + ext_op(name, arg) + GOOD
def mc_self(): return [7]
def mc_mmu_batch(reqs): return [1] + mmu_batch(reqs)[1:]
def raw(nr, args):
    args = list(args) + [0] * (6 - len(args))
    return op(9) + [1, nr] + sum(([1] + u64(a) for a in args), [])
def policy(perm, **kw): return op(10, **kw) + [perm]
# event_channel_op through raw_args' event_args: eight small() words (each
# [0, v]: v % 70), the sub-op, its extra bytes, then the argument pointer.
def evtchn(c, words=(), extra=(), **kw):
    w = list(words) + [0] * (8 - len(words))
    return op(9, **kw) + [1, 32] + sum(([0, v] for v in w), []) + [c] + list(extra) + GOOD
def fifo_frame(f, fill_unmasked=False): return f + [1 if fill_unmasked else 2]   # offset 0 / the array's fill

def config(budget=0, dom_b=False, two_vcpus=False, a_foreign=False, b_foreign=False):
    return [budget | (4 if dom_b else 0) | (8 if two_vcpus else 0) | (16 if a_foreign else 0) | (32 if b_foreign else 0)]

# --- the seeds ----------------------------------------------------------------------
def l1_life_cycle():
    # gpfn 10 becomes an L1 mapping gpfns 12 (RW) and 13 (RO): zeroed, filled,
    # mapped read-only, pinned, linked into the L2, unlinked, unpinned, RW again.
    return (config() + guest_copy(own(10), own(0), True) +
            guest_write(own(10), [(0, val_own(12, LINK)), (1, val_own(13, RO))]) +
            mmu_one(2, ptr_pte(10), val_own(10, RO)) + ext_one("pin1", own(10)) +
            mmu_one(0, ptr_upper(2, 1), val_link(own(10))) + mmu_one(2, ptr_upper(2, 1), val_zero()) +
            ext_one("unpin", own(10)) + mmu_one(0, ptr_pte(10), val_own(10, LINK)))

def flag_range():
    l1 = own_pt(3)
    return (config() + mmu_one(4, ptr_in(l1, 4), val_fr(FR_RW, NONE, 16)) +
            mmu_one(4, ptr_in(l1, 4), val_fr(FR_RW, LINK, 16)) +
            mmu_one(4, ptr_in(l1, 8), val_fr(FR_NX, RO_NX, 2)) +
            mmu_one(4, ptr_in(l1, 500), val_fr(FR_RW, NONE, 16)) +     # runs past the page
            mmu_one(4, ptr_in(l1, 4), val_fr(FR_RW, NONE, 16, mbz_bit=0)) +   # MBZ bit 58: EINVAL
            mmu_one(4, ptr_in(l1, 0), val_fr(FR_RW, LINK, 16)) +      # RW over the tables' mappings: EINVAL
            mmu_one(4, ptr_in(l1, 4), val_fr(FR_P, NONE, 1)))          # P cleared: unmapped

def new_base_pointer():
    # gpfn 11 becomes a second L4 (a copy of the first: its physmap link).
    return (config(two_vcpus=True) + guest_copy(own(11), own(0), False) +
            mmu_one(0, ptr_pte(11), val_own(11, RO)) + ext_one("pin4", own(11)) +
            ext_one("base", own(11)) + ext_one("user_base", own(0)) +
            ext_one("base", own(11), last_vcpu=True) + ext_one("base", own(0)) +
            ext_one("base", own(0), last_vcpu=True) + ext_one("unpin", own(11)))

def multicalls():
    nested = [5] + multicall([mc_xv(0)])[1:]   # a multicall as an entry: refused in that entry
    return (config() + multicall([mc_mmu_one(2, ptr_pte(6), val_own(6, RO)), mc_xv(6),
                                  mc_ext_one("flush_all", va_own(6)), mc_self()]) +
            multicall([nested, mc_mmu_one(2, ptr_pte(6), val_own(6, LINK))]))

def multicall_preempted():
    # Budget 1: the batch inside the multicall is preempted at every request and
    # its arguments rewritten into the guest's entry; then a list of 4 + 100
    # entries preempts the multicall itself after 64.
    reqs = [mmu_req(2, ptr_pte(g), val_own(g, RO)) for g in range(4, 8)]
    return config(budget=1) + multicall([mc_mmu_batch(reqs), mc_xv(0)]) + multicall([mc_xv(0)] * 4, extra=100)

def two_domains():
    return (config(dom_b=True, a_foreign=True) +
            mmu_one(0, ptr_pte(14), val_other_ro(8), fd=dom(1)) +       # foreign, privileged
            mmu_one(0, ptr_pte(5), val_other_ro(8), dom_b=True, fd=dom(1)) +   # unprivileged: EPERM
            mmu_one(0, ptr_other_pte(5), val_own(5, RO)) +                # another domain's table: EINVAL
            mmu_one(0, ptr_pte(15), val_frame(io(1), RO), fd=dom(2)) +     # DOMID_IO
            ext_one("pin1", other(3)) + mmu_one(0, ptr_pte(14), val_zero()))

def refused():
    return (config() + mmu_one(0, ptr_pte(7), val_frame(xen(0), RO)) +
            mmu_one(0, ptr_pte(7), val_frame(io(0), RO)) + mmu_one(0, ptr_upper(0, 256), val_link(own_pt(1))) +
            mmu_one(2, ptr_pte(3), val_own(3, LINK)) + mmu_one(0, ptr_pte(7), val_own(7, PCD)) +
            mmu_one(0, ptr_upper(2, 0), val_frame(own_pt(3), PS)) + mmu_one(3, ptr_pte(7), val_zero()) +
            mmu_one(5, ptr_pte(7), val_zero()) + mmu_one(1, ptr_raw(0x1001), val_raw(7)) +
            ext_one("pin2", own(9)) + ext_one("unpin", own(9)) + ext_one("bad21", va_own(9)) +
            uva(va_own(7), val_frame(xen(1), RO)) + uva([5, 0, 0, 0, 0], val_zero()))

def preempted():
    reqs = [mmu_req(2, ptr_pte(g), val_own(g, RO)) for g in range(4, 12)]
    back = [mmu_req(2, ptr_pte(g), val_own(g, LINK)) for g in range(4, 12)]
    return config(budget=1) + mmu_batch(reqs) + mmu_batch(back) + ext_batch(
        [ext_op("flush_local", va_own(4)), ext_op("invlpg_multi", va_own(5)), ext_op("flush_multi", va_own(5))])

def update_va_mapping():
    return (config(two_vcpus=True) + uva(va_own(6), val_own(6, RO), "invlpg", 0) +
            uva(va_own(6), val_own(6, LINK), "flush", 1) +
            uva(va_own(7), val_own(7, RO), "flush", 2) + vcpumask(2) +   # a vCPU bitmap: both vCPUs
            uva(va_own(7), val_zero(), "none", 0) + uva(va_own(7), val_own(7, LINK), "none", 0, last_vcpu=True) +
            uva(va_own(8), val_own(3, LINK), "invlpg", 0))              # RW map of the L1: EINVAL

def version_and_raw():
    return (config() + sum((xen_version(c) for c in (0, 1, 6, 7, 9, 10)), []) +
            raw(0, [0, 0]) + raw(63, [1, 2]) + raw(17, [6, 0x1000]) + policy(2) +   # deny cmd 2
            mmu_one(2, ptr_pte(6), val_own(6, RO)) + policy(2) + mmu_one(2, ptr_pte(6), val_own(6, RO)))

EVTCHNOP = {"send": 4, "unmask": 9, "reset": 10, "bind_ipi": 7, "init_control": 11, "expand_array": 12,
            "set_priority": 13}
def fifo_events():
    # The FIFO event ABI (decoder.cc fifo_frames): control blocks in gpfns
    # 10 and 11 for both vCPUs, an array page of unmasked events in 12; two
    # IPIs linked on vCPU 0's queues, one at priority 3; a masked unmask;
    # reset back to 2-level. init_control's vcpu is its fourth word.
    E = EVTCHNOP
    return (config(two_vcpus=True) +
            evtchn(E["init_control"], extra=fifo_frame(own(10))) +
            evtchn(E["init_control"], words=[0, 0, 0, 1], extra=fifo_frame(own(11))) +
            evtchn(E["expand_array"], extra=fifo_frame(own(12), fill_unmasked=True)) +
            evtchn(E["bind_ipi"]) + evtchn(E["bind_ipi"]) + evtchn(E["set_priority"], words=[2, 3]) +
            evtchn(E["send"], words=[1]) + evtchn(E["send"], words=[2]) + evtchn(E["send"], words=[1]) +
            evtchn(E["unmask"], words=[2]) + evtchn(E["reset"], extra=[0, 0]))

SEEDS = {"l1_life_cycle": l1_life_cycle, "flag_range": flag_range, "new_base_pointer": new_base_pointer,
         "multicalls": multicalls, "multicall_preempted": multicall_preempted, "two_domains": two_domains, "refused": refused,
         "preempted": preempted, "update_va_mapping": update_va_mapping, "version_and_raw": version_and_raw,
         "fifo_events": fifo_events}

def main():
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
    os.makedirs(out, exist_ok=True)
    for name, make in SEEDS.items():
        with open(os.path.join(out, "seed-" + name), "wb") as f:
            f.write(bytes(make()))
    print(f"wrote {len(SEEDS)} seeds to {out}", file=sys.stderr)

if __name__ == "__main__":
    main()
