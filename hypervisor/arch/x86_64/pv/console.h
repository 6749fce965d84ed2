// A guest's console output (console.cc): each vCPU's line buffer, written by
// CONSOLEIO_write and by EVTCHNOP_send on the console ring's port
// (event_channel.cc).
#pragma once

#include <stddef.h>

#include "pv/domain.h"

namespace pvmmu::x86 {

// The event channel of the console ring (start_info.console.domU.evtchn):
// EVTCHNOP_send on it makes the hypervisor print what the ring holds.
inline constexpr evtchn_port_t kConsolePort = 1;

// Prints what v's console line holds, ending it with a '\n' if it has none:
// when the vCPU stops (shutdown, crash, VCPUOP_down, its domain stopped).
// On v's own CPU only: the line is its vCPU's alone.
void guest_console_flush(Vcpu& v);

// Adds n bytes to v's console line; a '\n' sends the line out, as does a line
// that fills the buffer (with a '\n' added). On v's own CPU only.
void guest_console_put(Vcpu& v, const char* s, size_t n);

} // namespace pvmmu::x86
