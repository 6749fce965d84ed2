// The domain and extent rules of memory_op's reporting sub-ops
// (<xen/memory.h>; docs/abi.md §10 "memory_op"), as Xen 4.17 answers an
// unprivileged PV guest. Only the decisions: the platform copies the
// arguments and writes the answer (arch pv/memory.cc).
#pragma once

#include <stdint.h>

#include <pvmmu/abi.h>
#include <xen/memory.h>

#include "core/types.h"

namespace pvmmu {

// The sub-ops answered (maximum_ram_page, the reservations, maximum_gpfn)
// take no extent, the bits above the sub-op in memory_op's command word:
// Xen answers -EINVAL to a non-zero one.
constexpr long memop_extent_check(uint64_t extent) { return extent ? -XEN_EINVAL : 0; }

// Whom a xen_memory_domain's id names, for a caller of domain `self`: the
// caller itself (DOMID_SELF or its own id), 0; another domain's figures are
// for a privileged caller, -EPERM; an id no domain has, -ESRCH.
// `exists`: whether a domain has that id.
constexpr long memory_domain_check(domid_t id, DomId self, bool exists)
{
    if (id == DOMID_SELF || id == self) return 0;
    return exists ? -XEN_EPERM : -XEN_ESRCH;
}

// XENMEM_maximum_gpfn of a PV guest, as Xen computes it: the number of pfns
// the guest itself writes into shared_info.arch.max_pfn (Linux does), less
// one; 0 while it says nothing.
constexpr long maximum_gpfn(uint64_t max_pfn) { return long((max_pfn ? max_pfn : 1) - 1); }

} // namespace pvmmu
