// One hypercall as the core and a platform see it: the number and Xen's six
// argument words in, a result out. Its own header so that core/platform.h can
// name it for the platform's own hypercalls (Platform::arch_hypercall).
#pragma once

#include <stdint.h>

namespace pvmmu {

struct HypercallFrame {
    uint64_t op;
    uint64_t arg[6];
};

// How a call ended. One byte, tested once: the per-PTE path (mmu_update,
// direct or in a multicall) pays one compare for all of it.
enum class HcEnd : uint8_t {
    Done,
    Preempted,       // arg[] rewritten: issue the frame again to continue
    // The guest's registers were replaced by the call (iret): a multicall
    // stores this entry's result and ends with rc, its later entries not run
    // (Xen's mc_exit). A direct call is simply done.
    EndsMulticall,
};

struct [[nodiscard]] HcResult {
    long rc;
    HcEnd end;
    constexpr bool preempted() const { return end == HcEnd::Preempted; }
};

inline constexpr HcResult done(long rc) { return HcResult{rc, HcEnd::Done}; }
inline constexpr HcResult preempted() { return HcResult{0, HcEnd::Preempted}; }
inline constexpr HcResult ends_multicall(long rc) { return HcResult{rc, HcEnd::EndsMulticall}; }

} // namespace pvmmu
