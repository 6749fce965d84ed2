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

struct [[nodiscard]] HcResult {
    long rc;
    bool preempted;   // arg[] rewritten: issue the frame again to continue
    // The guest's registers were replaced by the call (iret): a multicall
    // stores this entry's result and ends with rc, its later entries not run
    // (Xen's mc_exit). Never set together with preempted.
    bool ends_multicall;
};

inline constexpr HcResult done(long rc) { return HcResult{rc, false, false}; }
inline constexpr HcResult preempted() { return HcResult{0, true, false}; }
inline constexpr HcResult ends_multicall(long rc) { return HcResult{rc, false, true}; }

} // namespace pvmmu
