// Port I/O and CLI/STI of a PV kernel, emulated (port_io.cc).
#pragma once

#include "cpu/traps.h"
#include "pv/decode.h"
#include "pv/domain.h"

namespace pvmmu::x86 {

// Port I/O and CLI/STI of the running vCPU's kernel (pv/port_io.cc), as Xen
// does them for a domain that was granted no I/O ports: refused (#GP) unless
// the virtual IOPL allows it, then reads all-ones, writes dropped. The
// instruction's length when it is done, 0 when refused (f then holds the
// exception to deliver), -1 when a REP string instruction is done in part
// (RIP stays, the rest runs when the guest does it again); *hits: the I/O
// breakpoints met.
int guest_port_io(Vcpu& v, TrapFrame& f, const PrivInsn& in, uint32_t* hits);

} // namespace pvmmu::x86
