// The boot self-tests. The word `selftest=NAME` on the hypervisor's command
// line makes it do, at one step of boot, something that a QEMU test must see
// it handle (tests/qemu/tests.cmake reads the outcome): a mapping the
// invariant check must refuse, an exception, a stack overflow, a guest frame
// the CPU refuses, a #DB over the #DB entry, a read SMAP must stop. All of
// them are in selftest.cc's table; the boot path only says which step it is
// at, and nothing runs without its word.
#pragma once

#include "boot/multiboot.h"
#include "pv/domain.h"

namespace pvmmu::x86 {

enum class SelftestStep : uint8_t {
    Paging,         // the hypervisor's tables built, before the boot CPU's per-CPU area
    BeforeGuests,   // every CPU online and the invariants checked, no domain built yet
    GuestsBuilt,    // every domain built and checked, none started
    CoreChecked,    // no domain to run: the core's own check done, before the run ends
};

// Runs the self-tests of `step` that the command line names, in table order.
// `guests`, `nr`: the domains built (at GuestsBuilt; nr may be 0).
void selftests(const BootInfo& boot, SelftestStep step, GuestDomain* guests = nullptr, unsigned nr = 0);

// A #DB from ring 3 (cpu/traps.cc), the moment of selftest=dbentry: does not
// return when it is that test's #DB, else returns at once.
void selftest_guest_debug();

} // namespace pvmmu::x86
