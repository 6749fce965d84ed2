// Each domain's end, read from the hypervisor's own console lines, so a run
// of several domains is judged domain by domain (docs/boot.md "The launcher's
// back ends"): `domain N: loading module I (...)` ties module I (the I-th
// domain pvmmu-run gave) to domain id N; `pvmmu: domain N shut down (REASON)
// by vCPU M` is its end (hypervisor/arch/x86_64/pv/run.cc); a
// `pvmmu: FAILED: domain N ...` line, after the loader's `domain: guest image
// refused: WHY`, says it was never built (boot/main.cc, pv/loader.cc).
#pragma once

#include <string>
#include <vector>

namespace pvmmu::run {

struct DomainEnd {
    unsigned id = 0;         // the hypervisor's domain id; 0: never loaded
    std::string refused;     // why it was not built ("": it was, or is unknown)
    std::string shutdown;    // its shutdown reason ("poweroff", "crash", ...; "": none seen)
};

// Whether a console line may be one domain_ends reads (the hypervisor's own
// "domain ..." and "pvmmu: ..." lines): the others need not be kept.
bool domain_line(const std::string& l);

// The ends of modules 0..n-1 as the console tells them.
std::vector<DomainEnd> domain_ends(const std::vector<std::string>& console, size_t n);
// The ends of the domains whose kernels are the modules kernel_module[0..]
// (a domain's ramdisk is a module too: kernel_modules(), run_backend.h).
std::vector<DomainEnd> domain_ends(const std::vector<std::string>& console, const std::vector<size_t>& kernel_module);

// Whether the console came from pvmmu's hypervisor at all (a module was loaded
// or refused), and not, say, from Xen.
bool from_pvmmu(const std::vector<DomainEnd>& ends);

// One domain's verdict: 0 (powered off), kRefused or kCrashed, with `what`
// ("powered off", "refused: WHY", "shut down (crash)", "never shut down").
int domain_verdict(const DomainEnd& e, std::string& what);

} // namespace pvmmu::run
