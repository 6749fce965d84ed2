// Busy-wait delays from the legacy PIT's channel 2 (the INIT-SIPI-SIPI
// sequence needs 10 ms and 200 µs waits before any timer is calibrated).
#pragma once

#include <stdint.h>

namespace pvmmu::x86 {

void pit_delay_us(uint32_t us);

} // namespace pvmmu::x86
