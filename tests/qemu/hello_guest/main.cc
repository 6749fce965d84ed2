// The smallest pvmmu guest kernel (issue 6, first guest milestone): it talks
// to the hypervisor only through the hypercall page, proves that hypercalls
// reach both the hypervisor's own table and the core's, that bad guest
// pointers are -EFAULT (an unmapped address, the hypervisor's slots, a
// read-only page table) and bad arguments the ABI's errno, then shuts down.
// Built twice (tests/qemu/tests.cmake): `hello-guest` ends with
// SHUTDOWN_poweroff after its checks; `crash-guest` (HELLO_CRASH) executes
// ud2 instead, which must end the domain as a crash.
#include <stddef.h>
#include <stdint.h>

#include <pvmmu/abi.h>

#include "hypercall.h"

using pvmmu::xenpv::hypercall;

namespace {

unsigned g_checks, g_failed;

size_t length(const char* s)
{
    size_t n = 0;
    while (s[n]) ++n;
    return n;
}

long write(const char* s) { return hypercall(__HYPERVISOR_console_io, CONSOLEIO_write, length(s), uint64_t(s)); }

void check(const char* what, long got, long want)
{
    ++g_checks;
    if (got == want) return;
    ++g_failed;
    write("hello guest: FAILED: ");
    write(what);
    write("\n");
}

void shutdown(unsigned reason)
{
    sched_shutdown_t s{reason};
    hypercall(__HYPERVISOR_sched_op, SCHEDOP_shutdown, uint64_t(&s));
}

} // namespace

extern "C" [[noreturn]] void xenpv_start(const start_info_t* si)
{
    check("console_io write", write("hello guest: running in ring 3\n"), 0);
    check("start_info magic", si->magic[0] == 'x' && si->magic[1] == 'e' && si->magic[2] == 'n', 1);
    uint16_t cs;
    asm volatile("mov %%cs, %0" : "=r"(cs));
    check("running in ring 3 on FLAT_RING3_CS64", cs, FLAT_RING3_CS64);

    // The hypervisor's direct map, an unmapped guest address, a non-canonical one.
    check("console_io from the hypervisor's slots",
          hypercall(__HYPERVISOR_console_io, CONSOLEIO_write, 8, 0xffff830000000000), -XEN_EFAULT);
    check("console_io from an unmapped address",
          hypercall(__HYPERVISOR_console_io, CONSOLEIO_write, 8, 0x0000100000000000), -XEN_EFAULT);
    check("console_io from a non-canonical address",
          hypercall(__HYPERVISOR_console_io, CONSOLEIO_write, 8, 0x0000800000000000), -XEN_EFAULT);
    check("console_io negative count", hypercall(__HYPERVISOR_console_io, CONSOLEIO_write, uint64_t(-1), 0),
          -XEN_EINVAL);
    check("console_io unknown command", hypercall(__HYPERVISOR_console_io, 77, 0, 0), -XEN_ENOSYS);

    // The core's table: xen_version, and a copy_to_guest into the read-only L4.
    check("xen_version", hypercall(__HYPERVISOR_xen_version, XENVER_version, 0) > 0, 1);
    check("xen_version into a read-only page table",
          hypercall(__HYPERVISOR_xen_version, XENVER_extraversion, si->pt_base), -XEN_EFAULT);
    xen_extraversion_t extra;
    check("xen_version extraversion", hypercall(__HYPERVISOR_xen_version, XENVER_extraversion, uint64_t(&extra)), 0);
    check("mmu_update with an unmapped request array",
          hypercall(__HYPERVISOR_mmu_update, 0x0000100000000000, 1, 0, DOMID_SELF), -XEN_EFAULT);

    check("unknown hypercall", hypercall(63), -XEN_ENOSYS);
    check("sched_op unknown command", hypercall(__HYPERVISOR_sched_op, 77, 0), -XEN_ENOSYS);
    sched_shutdown_t bad{SHUTDOWN_MAX + 1};
    check("shutdown with a bad reason", hypercall(__HYPERVISOR_sched_op, SCHEDOP_shutdown, uint64_t(&bad)),
          -XEN_EINVAL);
    check("shutdown with an unmapped argument",
          hypercall(__HYPERVISOR_sched_op, SCHEDOP_shutdown, 0x0000100000000000), -XEN_EFAULT);
    check("yield", hypercall(__HYPERVISOR_sched_op, SCHEDOP_yield, 0), 0);

#ifdef HELLO_CRASH
    write("hello guest: executing ud2 with no trap table\n");
    asm volatile("ud2");
#endif
    if (g_failed) {
        write("hello guest: some checks FAILED\n");
        shutdown(SHUTDOWN_crash);
    }
    write("hello guest: all checks passed\n");
    shutdown(SHUTDOWN_poweroff);
    for (;;) {
    }
}
