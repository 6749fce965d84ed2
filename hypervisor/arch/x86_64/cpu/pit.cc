// PIT channel 2 in mode 0 (interrupt on terminal count), polled through port
// 0x61: its OUT pin (bit 5) goes high when the count runs out. The gate (bit 0)
// enables counting; the speaker (bit 1) stays off. 8254 data sheet, modes and
// the PC's port 0x61 wiring.
#include "cpu/pit.h"

#include "cpu/x86.h"

namespace pvmmu::x86 {

namespace {
constexpr uint32_t kHz = 1193182;   // the PIT's input clock
constexpr uint16_t kCh2 = 0x42, kCmd = 0x43, kPortB = 0x61;
constexpr uint8_t kGate = 0x01, kSpeaker = 0x02, kOut2 = 0x20;
// Command: channel 2 (bits 7:6 = 10), lobyte then hibyte (5:4 = 11), mode 0, binary.
constexpr uint8_t kCh2Mode0 = 0xb0;
constexpr uint32_t kMaxChunkUs = 50000;   // under 65535 ticks
} // namespace

void pit_delay_us(uint32_t us)
{
    while (us) {
        const uint32_t chunk = us < kMaxChunkUs ? us : kMaxChunkUs;
        us -= chunk;
        const uint32_t ticks = uint32_t(uint64_t(chunk) * kHz / 1000000) + 1;
        outb(kPortB, uint8_t((inb(kPortB) & ~kSpeaker) | kGate));
        outb(kCmd, kCh2Mode0);
        outb(kCh2, uint8_t(ticks));
        outb(kCh2, uint8_t(ticks >> 8));   // writing the count starts it, OUT goes low
        // No PAUSE: the port read is the wait (about a microsecond on a PC's
        // bus), and this runs on the boot CPU before any other CPU is
        // started, so no CPU waits for its turn behind it. Under QEMU's
        // -icount a PAUSE here would end the CPU's turn at every read, which
        // makes the 50 ms calibration (boot/time.cc) cost about 40 s of host
        // time at 4 CPUs (docs/results.md §13).
        while (!(inb(kPortB) & kOut2)) {
        }
    }
}

} // namespace pvmmu::x86
