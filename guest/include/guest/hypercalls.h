// The hypercalls the library issues, counted per vCPU, with their argument
// arrays laid out in the vCPU's scratch pages (the hypervisor copies arguments
// from guest virtual addresses, so they cannot live anywhere else on the sim).
#pragma once

#include <pvmmu/abi.h>

#include "guest/guest.h"

namespace pvmmu::guest {

static_assert(sizeof(mmu_update_t) == 16 && sizeof(mmuext_op_t) == 24);
static_assert(__builtin_offsetof(mmuext_op_t, arg1) == 8 && __builtin_offsetof(mmuext_op_t, arg2) == 16);

// Any hypercall, counted.
long hypercall(Cpu& c, unsigned op, uint64_t a0 = 0, uint64_t a1 = 0, uint64_t a2 = 0, uint64_t a3 = 0,
               uint64_t a4 = 0);

// Copies n bytes (a multiple of 8) to guest memory with 64-bit stores.
[[nodiscard]] bool put_words(Cpu& c, Va dst, const void* src, uint64_t n);
[[nodiscard]] bool get_words(Cpu& c, Va src, void* dst, uint64_t n);

// Request i of the scratch request array.
[[nodiscard]] bool put_mmu_req(Cpu& c, unsigned i, uint64_t ptr, uint64_t val);

// mmu_update over the first n requests of the scratch array, DOMID_SELF;
// *done receives the requests completed (Xen's pdone).
long mmu_update_scratch(Cpu& c, unsigned n, uint32_t* done = nullptr, unsigned domid = DOMID_SELF);

// One checked update of the entry at machine address `ptr` with command `cmd`.
long mmu_update_one(Cpu& c, Maddr ptr, unsigned cmd, uint64_t val);

// Op i of the scratch mmuext_op array; arg2 of a *_MULTI op is set to the
// scratch vCPU bitmap by the caller through vcpumask().
[[nodiscard]] bool put_mmuext(Cpu& c, unsigned i, unsigned cmd, uint64_t arg1, uint64_t arg2);
long mmuext_scratch(Cpu& c, unsigned n, uint32_t* done = nullptr);
long mmuext_one(Cpu& c, unsigned cmd, uint64_t arg1, uint64_t arg2 = 0);

// Writes a vCPU bitmap to the scratch page; returns its guest address.
[[nodiscard]] bool put_vcpumask(Cpu& c, uint64_t mask, Va& at);

} // namespace pvmmu::guest
