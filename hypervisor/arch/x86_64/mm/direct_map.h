// Machine memory through the direct map (L4 slot 262, mm/layout.h): the one way
// the platform touches a physical address. During boot only the first GiB is
// mapped there (the boot tables of boot/boot32.S); after paging_build all RAM and
// the MMIO holes below 4 GiB are.
#pragma once

#include "core/types.h"
#include "mm/layout.h"

namespace pvmmu::x86 {

inline constexpr uint64_t kDirectMap = HV_DIRECTMAP_VIRT;
inline constexpr uint64_t kBootWindow = 1ull << 30;   // mapped by the boot tables

template <class T = void>
inline T* dmap(Maddr a)
{
    return reinterpret_cast<T*>(kDirectMap + a.v);
}

// The image's own physical addresses (linked at HV_IMAGE_VIRT + physical).
inline Maddr image_phys(const void* p) { return Maddr{reinterpret_cast<uint64_t>(p) - HV_IMAGE_VIRT}; }

} // namespace pvmmu::x86
