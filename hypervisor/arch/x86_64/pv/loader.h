// Building a PV domain from a guest kernel (loader.cc).
#pragma once

#include "pv/domain.h"

namespace pvmmu::x86 {

// Builds domain `id` from the ELF image [file, file + size) with nr_frames
// frames and nr_vcpus vCPUs (vCPU i on CPU first_cpu + i), loads it and
// prepares vCPU 0 to start at its entry point with start_info in %rsi; the
// domain then counts as running (guest_shutdown). 0, or a negative Xen errno
// with the reason printed.
// `cmdline` goes to start_info.cmd_line (the module string without its first
// word, the kernel's name). [module, module + module_len): the domain's
// initial module (a ramdisk; module_len 0: none), copied in after the image
// and described by start_info's mod_start and mod_len (pv/place.h).
int guest_load(DomId id, const uint8_t* file, size_t size, const uint8_t* module, size_t module_len,
               uint64_t nr_frames, unsigned nr_vcpus, CpuId first_cpu, const char* cmdline, GuestDomain& out);

} // namespace pvmmu::x86
