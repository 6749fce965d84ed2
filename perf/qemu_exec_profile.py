#!/usr/bin/env python3
"""Where the hypervisor's instructions go under QEMU TCG (docs/results.md §13).

QEMU's own logging counts what its translated code runs: `-d in_asm` prints
each translation block's instructions when it is made, `-d exec` one line each
time it runs, `nochain` keeps blocks from jumping straight into each other
(which would skip the exec line), and `-dfilter` keeps both to the hypervisor's
`.text`. This tool sums executions × instructions per block and maps them to
the hypervisor's symbols (`nm`).

  qemu_exec_profile.py wrap DIR HV OUT
      writes DIR/qemu-system-x86_64, a wrapper that runs the real QEMU with
      that logging into a FIFO read by `collect`; put DIR first on PATH and
      run anything that starts QEMU (./pvmmu bench linux --platform pvmmu ...).
      Each QEMU run appends one JSON line to OUT: {symbol: instructions}.
  qemu_exec_profile.py diff OUT_A OUT_B [--per N] [--top K] [--blocks | --groups]
      the per-symbol difference of the last runs in two OUT files, divided by
      N: two runs that differ only in the measured loop's length (mm-bench's
      --iters), N the extra pages, give the hypervisor's instructions per page
      with the boot and set-up cancelled out (icount runs are deterministic);
      --blocks lists single translation blocks (@ADDR) instead, for
      `addr2line -f -e HV ADDR`; --groups sums the symbols into the paths
      of the section's table (GROUPS).

RANGES leave out memset and the boot's delay loops, whose per-iteration
logging would make a boot too slow; their instructions are not counted.
The reader writes OUT once QEMU closes the log, which can be a moment after
the driver that started QEMU has returned. The exec lines are QEMU 7.2's
("Trace CPU: HOSTPTR [CS_BASE/PC/FLAGS/CFLAGS] SYMBOL").
"""
import bisect
import json
import os
import re
import stat
import subprocess
import sys

# --groups: the paths of docs/results.md §13 "Where pvmmu's fork goes", each
# a pattern over the (mangled) symbol names, the first match taking it.
GROUPS = (
    ("the emulated write-protect (fetch, decode, walk, checked write)",
     r"guest_pt_write|decode_pte_write|decode_wrprotect|guest_emulate|guest_fetch|logic_flags|pte_write_flags|"
     r"pt_write_target|walk_to_l1|emulate_l1_write|emulate_pt_write|guest_read16|general_write|"
     r"guest_debug_after_emulation"),
    ("the return to the guest (timers, watchdog, upcall check)",
     r"guest_return_|guest_upcall|next_deadline|arm_timer|system_time_now|lapic_timer_arm|guest_domain_stopped|"
     r"watchdog|fire_due_timers|tsc_at|guest_exit"),
    ("trap entry and exit stubs, dispatch",
     r"^trap_|syscall_entry|syscall_save|syscall_trap|syscall_dispatch|9hypercall|platform_hypercall|arch_hypercall|section_enter|"
     r"section_leave|4coreEv|bare_metal|hypervisor_trap|dispatch_rest"),
    ("mmu_update", r"mmu_update|plain_update|plain_run|run_batch|RequestReader|pt_update|l1_run|mod_entry"),
    ("the #PF bounce and its iret",
     r"guest_bounce|guest_deliver|deliver_to|do_iret|guest_iret_mode|guest_enter_kernel_mode|guest_enter_user_mode|"
     r"guest_switch_to|guest_shared_vcpu_info|guest_vcpu_info"),
    ("pin and unpin", r"validate_table|skip_absent|mmuext|one_op|end_last_table_drop"),
    ("page references", r"get_page|put_page|entry_refs|change_entry|get_existing_table|TableCursor"),
    ("guest copies", r"guest_copy|copy_from_guest|copy_to_guest"),
)

SKIP = ("memset", "_ZN5pvmmu3x8612tsc_delay_usEm", "_ZN5pvmmu3x8612pit_delay_usEj")


def symbols(hv):
    """Sorted (address, size, name) of the hypervisor's text symbols."""
    out = subprocess.run(["nm", "-nS", hv], capture_output=True, text=True, check=True).stdout
    syms = []
    for line in out.splitlines():
        p = line.split()
        if len(p) == 4 and p[2] in "tTwW":
            syms.append((int(p[0], 16), int(p[1], 16), p[3]))
        elif len(p) == 3 and p[1] in "tTwW":
            syms.append((int(p[0], 16), 0, p[2]))
    return syms


def ranges(hv):
    """-dfilter's ranges: the hypervisor's .text less SKIP's symbols."""
    syms = symbols(hv)
    start = next(a for a, _, n in syms if n == "__hv_text_start")
    end = next(a for a, _, n in syms if n == "__hv_text_end")
    holes = sorted((a, a + s) for a, s, n in syms if n in SKIP)
    out, at = [], start
    for a, b in holes:
        if a > at:
            out.append(f"0x{at:x}..0x{a - 1:x}")
        at = max(at, b)
    out.append(f"0x{at:x}..0x{end - 1:x}")
    return ",".join(out)


def collect(fifo, hv, out):
    """Reads QEMU's log from FIFO; appends {symbol: instructions} to OUT."""
    syms = symbols(hv)
    addrs = [a for a, _, _ in syms]
    size = {}          # (pc, cflags) -> instructions in that block
    runs = {}          # (pc, cflags) -> executions
    pending = None     # the block just translated: (pc, instructions)
    tb_pc, tb_n = None, 0
    with open(fifo, errors="replace") as log:
        for line in log:
            if line.startswith("Trace "):
                # Trace CPU: HOSTPTR [CS_BASE/PC/FLAGS/CFLAGS] SYMBOL
                f = line[line.index("[") + 1:line.index("]")].split("/")
                key = (int(f[1], 16), f[3])
                if pending and pending[0] == key[0]:
                    size[key] = pending[1]
                    pending = None
                runs[key] = runs.get(key, 0) + 1
            elif line.startswith("IN:"):
                tb_pc, tb_n = None, 0
            elif line.startswith("0x") and ":  " in line:
                if tb_pc is None:
                    tb_pc = int(line.split(":", 1)[0], 16)
                tb_n += 1
                pending = (tb_pc, tb_n)
    per = {}
    for key, n in runs.items():
        i = bisect.bisect_right(addrs, key[0]) - 1
        name = syms[i][2] if i >= 0 else "?"
        per[name] = per.get(name, 0) + n * size.get(key, 1)
        pc = f"@{key[0]:x}"
        per[pc] = per.get(pc, 0) + n * size.get(key, 1)
    with open(out, "a") as o:
        o.write(json.dumps(per) + "\n")


def wrap(dirname, hv, out):
    os.makedirs(dirname, exist_ok=True)
    real = None
    for d in os.environ["PATH"].split(os.pathsep):
        p = os.path.join(d, "qemu-system-x86_64")
        if os.path.abspath(d) != os.path.abspath(dirname) and os.access(p, os.X_OK):
            real = p
            break
    me = os.path.abspath(__file__)
    script = f"""#!/bin/sh
fifo=$(mktemp -u /tmp/qemu-exec.XXXXXX)
mkfifo "$fifo"
python3 {me} collect "$fifo" {hv} {out} &
"{real}" "$@" -d in_asm,exec,nochain -dfilter {ranges(hv)} -D "$fifo"
rc=$?
wait
rm -f "$fifo"
exit $rc
"""
    path = os.path.join(dirname, "qemu-system-x86_64")
    with open(path, "w") as f:
        f.write(script)
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def last(path):
    with open(path) as f:
        return json.loads(f.read().splitlines()[-1])


def diff(a, b, per, top, blocks, groups=False):
    pa, pb = last(a), last(b)
    if groups:
        sums = {name: 0.0 for name, _ in GROUPS}
        sums["other"] = 0.0
        for k in set(pa) | set(pb):
            if k.startswith("@"):
                continue
            name = next((n for n, rx in GROUPS if re.search(rx, k)), "other")
            sums[name] += (pb.get(k, 0) - pa.get(k, 0)) / per
        for name, v in sums.items():
            print(f"{v:10.1f}  {name}")
        print(f"{sum(sums.values()):10.1f}  (all)")
        return
    # Keys "@ADDR" are single blocks, shown with --blocks only.
    d = {k: (pb.get(k, 0) - pa.get(k, 0)) / per for k in set(pa) | set(pb) if blocks or not k.startswith("@")}
    rows = sorted(d.items(), key=lambda kv: -abs(kv[1]))
    for name, v in rows[:top]:
        print(f"{v:10.1f}  {name}")
    if not blocks:
        print(f"{sum(d.values()):10.1f}  (all)")


def main(argv):
    if len(argv) >= 4 and argv[0] == "collect":
        collect(argv[1], argv[2], argv[3])
    elif len(argv) == 4 and argv[0] == "wrap":
        wrap(os.path.abspath(argv[1]), os.path.abspath(argv[2]), os.path.abspath(argv[3]))
    elif len(argv) >= 3 and argv[0] == "diff":
        per, top, blocks, groups = 1.0, 40, False, False
        rest = argv[3:]
        while rest:
            if rest[0] in ("--blocks", "--groups"):
                blocks |= rest[0] == "--blocks"
                groups |= rest[0] == "--groups"
                rest = rest[1:]
                continue
            if rest[0] == "--per":
                per = float(rest[1])
            elif rest[0] == "--top":
                top = int(rest[1])
            else:
                sys.exit(f"unknown option {rest[0]}")
            rest = rest[2:]
        diff(argv[1], argv[2], per, top, blocks, groups)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
