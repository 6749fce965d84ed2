// A guest's console (docs/abi.md §10 "Console"): console_io's argument
// rules, the console ring's indices both ways, and which of a guest's lines
// are marked with its domain. Only the decisions: the platform copies the
// bytes, keeps each vCPU's line, writes it to the serial console and reads
// the UART (arch pv/console.cc, pv/event_channel.cc, pv/console_input.cc).
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <pvmmu/abi.h>

namespace pvmmu {

// CONSOLEIO_write(count, buf): count is an int in Xen's prototype; a negative
// one is -EINVAL. At most kConsoleRound bytes per round; the rest is a
// continuation (Xen's hypercall_create_continuation for console_io), so a
// huge count neither holds the CPU with interrupts unserved nor the console.
constexpr long console_write_count_check(int32_t count) { return count < 0 ? -XEN_EINVAL : 0; }
inline constexpr int64_t kConsoleRound = 1024;

// The console ring's output (<xen/io/console.h>): the bytes between out_cons
// and out_prod. The indices are the guest's and may be anything; more bytes
// than the ring of `size` holds is -EINVAL, nothing read.
constexpr long console_ring_check(uint32_t cons, uint32_t prod, uint32_t size)
{
    return uint32_t(prod - cons) > size ? -XEN_EINVAL : 0;
}

// The console ring's input: the room between in_prod and in_cons for bytes
// typed at the console. Both indices are in the guest's page and may be
// anything: a ring that claims as much as it holds or more has no room, and
// takes nothing until the guest mends it.
constexpr uint32_t console_ring_room(uint32_t cons, uint32_t prod, uint32_t size)
{
    const uint32_t used = prod - cons;
    return used < size ? size - used : 0;
}

// The first words of the hypervisor's own lines, which the launcher reads as
// verdicts (tools/run_domains.cc, tools/run_qemu.cc): a guest line that starts
// with one is marked with its domain, as Xen marks a domU's lines "(dN) ", so
// a guest cannot end the run or judge a domain by printing one. A piece of a
// line (`piece`: printed before its '\n', while its vCPU waits) is marked when
// it starts like one, as its next bytes might complete the word.
inline constexpr const char* kHypervisorWords[] = {"pvmmu", "domain", "PANIC"};

constexpr bool console_line_marked(const char* line, size_t len, bool piece)
{
    for (const char* w : kHypervisorWords) {
        size_t i = 0;
        while (w[i] && i < len && line[i] == w[i]) ++i;
        if (!w[i] || (piece && i == len)) return true;
    }
    return false;
}

// The mark of domain `id`, "(dN) ", into `out` with its NUL.
inline constexpr size_t kConsoleMarkSize = 16;   // "(d" + at most 10 digits + ") " + NUL
constexpr void console_mark(uint32_t id, char (&out)[kConsoleMarkSize])
{
    char digits[10] = {};
    size_t nd = 0, n = 0;
    for (uint32_t v = id; nd == 0 || v; v /= 10) digits[nd++] = char('0' + v % 10);
    out[n++] = '(';
    out[n++] = 'd';
    while (nd) out[n++] = digits[--nd];
    out[n++] = ')';
    out[n++] = ' ';
    out[n] = 0;
}

} // namespace pvmmu
