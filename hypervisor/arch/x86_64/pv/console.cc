// A guest's console output (docs/abi.md §10 "Console"): CONSOLEIO_write and
// the console ring's EVTCHNOP_send (event_channel.cc). Both go through the writing vCPU's line
// buffer, so a line reaches the serial console in one piece under the console
// lock, never mixed with another domain's bytes or the hypervisor's own
// messages (several CPUs write to the one port). A line without its '\n'
// goes out when its vCPU waits (guest_console_flush_partial: a shell's
// prompt); another writer's bytes then start a line of their own.
#include <atomic>
#include <string.h>

#include <pvmmu/abi.h>

#include "core/console_rules.h"
#include "lib/console.h"
#include "mm/core_glue.h"
#include "pv/console.h"
#include "pv/domain.h"
#include "pv/hypercall.h"
#include "pv/surface.h"

namespace pvmmu::x86 {

namespace {

// Which lines are marked with their domain (a piece of a line is
// guest_console_flush_partial's): core/console_rules.h.

// The console's owner tag of a vCPU (lib/console.h): its pieces of a line
// continue each other, never another's.
uint32_t owner_of(const Vcpu& v) { return uint32_t(v.domain->id) << 16 | (v.id + 1); }

void emit(const Vcpu& v, ConsoleLine& l, bool piece)
{
    char mark[kConsoleMarkSize];
    const char* prefix = nullptr;
    if (console_line_marked(l.buf, l.len, piece)) {
        console_mark(v.domain->id, mark);
        prefix = mark;
    }
    console_write(l.buf, l.len, owner_of(v), prefix);
    l.len = 0;
}

} // namespace

// Adds bytes to v's line; a '\n' sends the line out. A line that fills the
// buffer goes out with a '\n' added (the last byte of the buffer is kept for it).
void guest_console_put(Vcpu& v, const char* s, size_t n)
{
    ConsoleLine& l = arch(v).line;
    for (size_t i = 0; i < n; ++i) {
        l.buf[l.len++] = s[i];
        if (s[i] == '\n') emit(v, l, false);
        else if (l.len == sizeof(l.buf) - 1) guest_console_flush(v);
    }
}

void guest_console_flush(Vcpu& v)
{
    ConsoleLine& l = arch(v).line;
    if (!l.len) return;
    if (l.buf[l.len - 1] != '\n') l.buf[l.len++] = '\n';
    emit(v, l, false);
}

void guest_console_flush_partial(Vcpu& v)
{
    ConsoleLine& l = arch(v).line;
    if (l.len) emit(v, l, true);
}

// console_io(cmd, count, buf): CONSOLEIO_write takes count bytes from buf,
// read in chunks: the bytes of chunks before one that faults are already in
// the line (the console has no state to restore); the call then fails with
// -EFAULT. After kConsoleRound bytes the arguments are advanced and the call
// continues (a continuation: the guest re-executes its SYSCALL, or its
// multicall resumes at this entry), returning 0 at the end.
HcResult do_console_io(Vcpu& v, HypercallFrame& f)
{
    // cmd is an int in Xen's prototype: the argument's high half is not looked at.
    if (!arch_subop_known(__HYPERVISOR_console_io, uint32_t(f.arg[0])))   // CONSOLEIO_write only
        return done(-XEN_ENOSYS);
    const int64_t count = int64_t(int32_t(f.arg[1]));   // an int in Xen's prototype
    if (long rc = console_write_count_check(int32_t(count))) return done(rc);
    char chunk[128];
    int64_t taken = 0;
    while (taken < count && taken < kConsoleRound) {
        const size_t n = size_t(count - taken) < sizeof(chunk) ? size_t(count - taken) : sizeof(chunk);
        if (core()->platform().copy_from_guest(v, chunk, Vaddr{f.arg[2] + uint64_t(taken)}, n))
            return done(-XEN_EFAULT);
        guest_console_put(v, chunk, n);
        taken += int64_t(n);
    }
    if (taken == count) {
        console_input_poll(v);
        return done(0);
    }
    f.arg[1] = uint64_t(count - taken);
    f.arg[2] += uint64_t(taken);
    return preempted();   // the multicall or syscall_dispatch issues it again
}

} // namespace pvmmu::x86
