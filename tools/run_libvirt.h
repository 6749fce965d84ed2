// The libvirt back end's parts that need no libvirt (run_libvirt_xml.cc):
// the domain XML of pvmmu's machine, built from the same domain list and the
// same QEMU facts as the qemu back end (run_qemu.cc), so the unit tests can
// validate it where libvirt's library is missing.
#pragma once

#include <string>
#include <vector>

#include "run_backend.h"

namespace pvmmu::run {

// The domain XML for libvirt's QEMU driver: pvmmu-hv as <kernel>, the
// modules as <initrd> (',,'-escaped, as -initrd takes them), one CPU per
// vCPU, COM1 a pty console, pvpanic, ACPI (the MADT, and soft-off); no
// isa-debug-exit. accel: kvm (type='kvm'), tcg or tcg-icount (type='qemu',
// -icount by <qemu:commandline>). serial_log: a file QEMU copies COM1 into
// as well ("": none). hv_args: pvmmu-hv's command line (<cmdline>; "": none).
std::string libvirt_domain_xml(const std::vector<Domain>& doms, const std::string& accel, const std::string& name,
                               const std::string& hv_image, const std::string& serial_log = "",
                               const std::string& hv_args = "");

// A domain name unique to this run (pvmmu-NAME-PID-N): libvirt refuses a
// second running domain of the same name.
std::string libvirt_domain_name(const std::vector<Domain>& doms);

// The URI --platform libvirt connects to without '=URI': the embedded QEMU
// driver rooted in the build tree (no daemon).
std::string libvirt_default_uri();

} // namespace pvmmu::run

namespace pvmmu::run {

// The back end's prepare (run_libvirt.cc; run_libvirt_missing.cc, a SKIP,
// where pvmmu-run was built without libvirt).
int libvirt_prepare(const std::vector<Domain>& doms, const Options& o, Launch& l, std::string& why);
// --describe-host: the host behind --platform libvirt[=URI] as one line of
// JSON on stdout (run_libvirt_host.h), for benchmark sweeps over several
// hosts (perf/sweep.py). 0, or kSkipped (no connection) or kCrashed with `why`.
int libvirt_describe_host(const Options& o, std::string& why);
// Whether pvmmu-run was built with libvirt (for --help).
extern const bool kLibvirtBuilt;

// How a domain ended, in virsh's words ("shut off (shutdown)", "crashed
// (panicked)"): from a lifecycle event (VIR_DOMAIN_EVENT_*, its detail), or
// from virDomainGetState's state and reason. "": not an end (running).
std::string libvirt_event_words(int event, int detail);
std::string libvirt_state_words(int state, int reason);

} // namespace pvmmu::run
