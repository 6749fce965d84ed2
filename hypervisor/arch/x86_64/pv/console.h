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

// Prints what v's console line holds without ending it (a prompt): when v
// blocks or polls (event_channel.cc), so what it wrote before waiting is
// seen. Its next bytes continue the line unless another writer came between.
// On v's own CPU only.
void guest_console_flush_partial(Vcpu& v);

// Adds n bytes to v's console line; a '\n' sends the line out, as does a line
// that fills the buffer (with a '\n' added). On v's own CPU only.
void guest_console_put(Vcpu& v, const char* s, size_t n);

// The console domain's input (console_input.cc): g, once its console ring and
// events are set up, may become the domain the serial console's input goes to.
void console_input_register(GuestDomain& g);

// If v's domain is the console domain: what the UART has received, as much as
// its ring's `in` has room for, copied there and its console port raised.
// From a hypercall of v's or a return to v, on v's own CPU.
void console_input_poll(Vcpu& v);

} // namespace pvmmu::x86
