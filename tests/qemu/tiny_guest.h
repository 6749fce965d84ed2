#pragma once
// The few helpers of the tiny test guests (hello_guest, isolation_guest):
// console output and exact-result checks through the hypercall page only.
#include <stddef.h>
#include <stdint.h>

#include <pvmmu/abi.h>
#include <xen/io/console.h>

#include "hypercall.h"

namespace tiny {

using pvmmu::xenpv::hypercall;

inline unsigned g_checks, g_failed;

inline size_t length(const char* s)
{
    size_t n = 0;
    while (s[n]) ++n;
    return n;
}

inline long write(const char* s)
{
    return hypercall(__HYPERVISOR_console_io, CONSOLEIO_write, length(s), uint64_t(s));
}

// Writes v as 0x… at out (at most 18 characters and a NUL); returns its length.
inline int format_hex(char* out, uint64_t v)
{
    int n = 0;
    out[n++] = '0', out[n++] = 'x';
    for (int shift = 60; shift >= 0; shift -= 4)
        if ((v >> shift) || shift == 0 || n > 2) out[n++] = "0123456789abcdef"[(v >> shift) & 15];
    out[n] = 0;
    return n;
}

inline void write_hex(uint64_t v)
{
    char b[19];
    format_hex(b, v);
    write(b);
}

// Counts a check; prints the ones whose result is not `want`, with what came.
inline void check(const char* what, long got, long want)
{
    ++g_checks;
    if (got == want) return;
    ++g_failed;
    write("FAILED: ");
    write(what);
    write(" (got ");
    write_hex(uint64_t(got));
    write(")\n");
}

// Whether the word w (e.g. "role=spin") starts a word of the domain's command line.
inline bool has_word(const start_info_t* si, const char* w)
{
    const char* s = reinterpret_cast<const char*>(si->cmd_line);
    for (size_t i = 0; s[i]; ++i) {
        size_t k = 0;
        while (w[k] && s[i + k] == w[k]) ++k;
        if (!w[k] && (i == 0 || s[i - 1] == ' ')) return true;
    }
    return false;
}

// Start-of-day memory as both hypervisors lay it out: gpfn g at
// XENPV_VIRT_BASE + g * 4 KiB (on Xen only the boot region, up to the initial
// RSP and the 4 MiB boundary after it, is mapped), frame p2m[g], the L4 at
// pt_base (pvmmu: gpfn 0; Xen: after the image). Found by walking, so
// neither layout's table order is assumed.
inline const uint64_t* p2m(const start_info_t* si) { return reinterpret_cast<const uint64_t*>(si->mfn_list); }
inline uint64_t gpfn_of(const start_info_t* si, uint64_t mfn)
{
    for (uint64_t g = 0; g < si->nr_pages; ++g)
        if (p2m(si)[g] == mfn) return g;
    return ~0ull;
}
inline uint64_t* gpfn_bytes(uint64_t g) { return reinterpret_cast<uint64_t*>(XENPV_VIRT_BASE + (g << 12)); }
// The machine address of the L1 entry that maps va (mapped at start of day).
inline uint64_t l1_entry_of(const start_info_t* si, uint64_t va)
{
    uint64_t mfn = p2m(si)[(si->pt_base - XENPV_VIRT_BASE) >> 12];
    for (int shift = 39; shift > 12; shift -= 9)
        mfn = (gpfn_bytes(gpfn_of(si, mfn))[(va >> shift) & 511] >> 12) & 0xffffffffffull;
    return (mfn << 12) + ((va >> 12) & 511) * 8;
}

// shared_info (start_info.shared_info is its machine address) mapped over
// the page after the initial stack's, which both hypervisors map (on Xen it
// pads the boot region); its address, or null when the mapping is refused.
inline volatile shared_info_t* map_shared_info(const start_info_t* si, uint64_t initial_sp)
{
    const uint64_t va = ((initial_sp + 4095) & ~4095ull) + 4096;
    const long rc = hypercall(__HYPERVISOR_update_va_mapping, va, (si->shared_info & ~0xfffull) | 0x67,
                              UVMF_INVLPG | UVMF_LOCAL);
    return rc ? nullptr : reinterpret_cast<volatile shared_info_t*>(va);
}

inline void shutdown(unsigned reason)
{
    sched_shutdown_t s{reason};
    hypercall(__HYPERVISOR_sched_op, SCHEDOP_shutdown, uint64_t(&s));
}

// "<who>: all checks passed" and poweroff, or "<who>: some checks FAILED"
// and a crash shutdown.
[[noreturn]] inline void finish(const char* who)
{
    // One console_io call for the line: other domains and the hypervisor write
    // to the same serial port, a line at a time.
    char line[96];
    size_t n = 0;
    for (const char* p = who; *p && n < 64; ++p) line[n++] = *p;
    for (const char* p = g_failed ? ": some checks FAILED\n" : ": all checks passed\n"; *p; ++p) line[n++] = *p;
    line[n] = 0;
    write(line);
    shutdown(g_failed ? SHUTDOWN_crash : SHUTDOWN_poweroff);
    for (;;) {
    }
}

} // namespace tiny
