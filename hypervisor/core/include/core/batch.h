// The batch engine of mmu_update and mmuext_op: a request array run to its
// first failure, preempted after a budget of work and continued as Xen's
// continuation scheme does (the pdone counter, PVMMU_MMU_UPDATE_PREEMPTED).
#pragma once

#include <pvmmu/abi.h>

#include "core/pagetable.h"
#include "core/platform.h"
#include "core/request_reader.h"
#include "core/hypercall.h"

namespace pvmmu {

// What run_batch does with a batch of one request (uint32_t(f.arg[1]) == 1: not
// a continuation, whose count carries PVMMU_MMU_UPDATE_PREEMPTED), without the
// chunk, the budget or the run: one request is never preempted after (none
// is left), and a run needs two. Linux's copy-on-write fault sets its PTE so
// (its __xen_set_pte outside lazy-MMU mode), as most of its
// mmuext_ops (a pin, an unpin, a flush). A hypercall calls it from a function
// of its own, so that neither it nor run_batch pays for the other's frame.
template <class Req, class Handler>
HcResult run_one(Hypervisor& hv, Vcpu& v, HypercallFrame& f, long rc, Handler& handler)
{
    Platform& plat = hv.platform();
    const Vaddr pdone{f.arg[2]};
    if (rc == 0) {
        Req req;
        rc = -XEN_EFAULT;
        if (!plat.copy_from_guest(v, &req, Vaddr{f.arg[0]}, sizeof(req))) {
            uint32_t units = 1;
            rc = handler(req, units);
        }
    }
    handler.finish();
    const uint32_t done = rc == 0;
    if (pdone.v && plat.copy_to_guest(v, pdone, &done, sizeof(done)) && rc == 0) rc = -XEN_EFAULT;
    return pvmmu::done(rc);
}

// The batch loop of mmu_update and mmuext_op (Xen's semantics, docs/design.md §3):
// arg[0] the request array, arg[1] the count, arg[2] pdone. Requests are read
// through a RequestReader; the first failure stops the batch; after
// preempt_budget units of work the call is preempted with arg[0] and arg[1]
// describing what is left and PVMMU_MMU_UPDATE_PREEMPTED set, *pdone carrying the
// count so far. `handler(req, units)` does one request; `handler.finish()` runs
// before the results are written back (it releases what the batch held). A
// handler may also offer `handler.run(reader, i, end, did)`: requests i .. end - 1,
// one unit each, in one go, stopping (that request untouched) at the first it
// leaves to handler(req, units) and failing as handler would; `did` receives the
// requests it completed. On top of those units each step is charged the entries
// of the page tables its domain validated or devalidated meanwhile
// (Domain::table_work): a pin or a link of a big tree costs what it did, not
// one unit, and another domain's work costs nothing.
template <class Req, class Handler>
HcResult run_batch(Hypervisor& hv, Vcpu& v, HypercallFrame& f, long rc, Handler& handler)
{
    const Vaddr ureqs{f.arg[0]};
    uint32_t count = uint32_t(f.arg[1]);
    const Vaddr pdone{f.arg[2]};
    Platform& plat = hv.platform();

    uint32_t done = 0;
    if (count & PVMMU_MMU_UPDATE_PREEMPTED) {
        count &= ~PVMMU_MMU_UPDATE_PREEMPTED;
        if (pdone.v && plat.copy_from_guest(v, &done, pdone, sizeof(done))) return pvmmu::done(-XEN_EFAULT);
    }

    RequestReader<Req> reqs(plat, v, ureqs, count);
    const uint64_t budget = hv.config().preempt_budget;
    uint64_t work = 0;
    uint32_t i = 0;
    bool preempt = false;
    while (rc == 0 && i < count) {
        uint32_t did = 0, units = 0;
        const uint64_t table_work = v.domain->table_work();
        if constexpr (requires { handler.run(reqs, i, count, did); }) {
            // Never past the budget, so preemption falls where one-by-one
            // processing would put it (work < budget here, or budget is 0).
            const uint32_t room = budget - work < count - i ? uint32_t(budget - work) : count - i;
            rc = handler.run(reqs, i, i + room, did);
            units = did;
        }
        if (rc == 0 && did == 0) {
            uint32_t n;
            const Req* req = reqs.at(i, n);
            if (!req) {
                rc = -XEN_EFAULT;
                break;
            }
            units = 1;
            rc = handler(*req, units);
            did = rc == 0;
        }
        i += did;
        if (rc) break;
        work += units + (v.domain->table_work() - table_work);
        if (work >= budget && i < count) {
            preempt = true;
            break;
        }
    }
    handler.finish();

    done += i;
    if (pdone.v && plat.copy_to_guest(v, pdone, &done, sizeof(done)) && rc == 0) rc = -XEN_EFAULT;
    if (preempt && rc == 0) {
        f.arg[0] = ureqs.v + uint64_t(i) * sizeof(Req);
        f.arg[1] = (count - i) | PVMMU_MMU_UPDATE_PREEMPTED;
        return preempted();
    }
    return pvmmu::done(rc);
}

} // namespace pvmmu
