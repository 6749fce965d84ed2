// Which I/O ports a 64-bit PV kernel may use and what they answer
// (docs/abi.md §12), as Xen 4.17 decides it for a domain that was granted no
// port: the virtual IOPL that PHYSDEVOP_set_iopl sets and IN, OUT, INS,
// OUTS, CLI and STI are checked against, and the values the emulated ports
// read. Only the decisions: the platform decodes the instruction, moves
// the string elements through the guest's page tables and delivers the
// faults (arch pv/port_io.cc, pv/physdev.cc).
#pragma once

#include <stdint.h>

#include <pvmmu/abi.h>

namespace pvmmu {

// PHYSDEVOP_set_iopl(iopl): 0 to 3, else -EINVAL.
constexpr long set_iopl_check(uint32_t iopl) { return iopl > 3 ? -XEN_EINVAL : 0; }

// Xen runs a 64-bit PV kernel at virtual CPL 1 (VMASST_TYPE_architectural_iopl,
// which would make it 0, is not offered): an IOPL of 1 or more lets it at the
// ports (Xen's iopl_ok); below that each of the instructions keeps its #GP(0).
constexpr bool port_io_allowed(uint8_t iopl) { return iopl >= 1; }

// The PCI configuration address, which Xen emulates for every domain with a
// 32-bit access: it reads back what the domain wrote.
inline constexpr uint16_t kPciConfigAddress = 0xcf8;

// A port's latch is the PCI configuration address, for an access of `size` bytes.
constexpr bool port_is_cf8(unsigned port, unsigned size) { return port == kPciConfigAddress && size == 4; }

// An IN of `size` bytes (1, 2 or 4): the latch of a port_is_cf8 access
// (`cf8`), all ones from any other port (not granted: Xen's guest_io_read).
// Writes to those take no effect (guest_io_write).
constexpr uint32_t port_read_value(unsigned port, unsigned size, uint32_t cf8)
{
    if (port_is_cf8(port, size)) return cf8;
    return size == 4 ? ~0u : (1u << (8 * size)) - 1;
}

// The accumulator after an IN of `size` bytes: AL and AX merge into RAX,
// EAX zero-extends into it, as the CPU writes them.
constexpr uint64_t accumulator_after_in(uint64_t rax, unsigned size, uint32_t value)
{
    if (size == 4) return value;
    const uint64_t mask = (1ull << (8 * size)) - 1;
    return (rax & ~mask) | (value & mask);
}

} // namespace pvmmu
