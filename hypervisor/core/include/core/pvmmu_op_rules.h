// The argument rules of pvmmu_op, pvmmu's own hypercall (docs/abi.md §10
// "pvmmu_op (55)"): which vCPU a counter read may name, who may read the
// machine-wide counts or run the invariant check, and what the check
// returns. Only the decisions: the platform snapshots the counters, runs the
// check on a quiescent machine and copies the results out (arch
// pv/pvmmu_op.cc). PVMMUOP_deny's rule is the domain's Policy's
// (core/policy.h deny_abi).
#pragma once

#include <stdint.h>

#include <pvmmu/abi.h>

namespace pvmmu {

// PVMMUOP_vcpu_counters and PVMMUOP_vcpu_calls: a vCPU of the caller's
// domain, the whole 64-bit argument looked at, else -EINVAL.
constexpr long pvmmu_op_vcpu_check(uint64_t vcpu, uint32_t nr_vcpus) { return vcpu >= nr_vcpus ? -XEN_EINVAL : 0; }

// PVMMUOP_install_retries: the count is machine-wide, so only a domain that
// has the machine to itself (the only one that has run) may read it, else -EPERM.
constexpr long install_retries_check(unsigned domains_started) { return domains_started == 1 ? 0 : -XEN_EPERM; }

// PVMMUOP_check_invariants: only a domain booted with the module word
// `invariant-check`, else -EPERM.
constexpr long check_invariants_check(bool invariant_check) { return invariant_check ? 0 : -XEN_EPERM; }

// What PVMMUOP_check_invariants returns: the violations found, at most
// INT32_MAX, so that the count never reads as an errno.
constexpr long check_invariants_result(uint64_t violations)
{
    return violations > 0x7fffffff ? 0x7fffffff : long(violations);
}

} // namespace pvmmu
