// What the files of the xenpv platform share (the platform itself is
// described in main.cc): the symbols of entry.S, head.S and the linker
// script, the vCPU's Transport and Memory, and the state each file keeps for
// the others. Internal to guest/platform/xenpv; the runtime sees the platform
// only through rt_platform.h.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "guest/pte.h"
#include "hypercall.h"
#include "rt_platform.h"

// Symbols of entry.S, head.S and the linker script: hidden, so references
// stay RIP-relative (the image is linked static, there is no GOT to go through).
#pragma GCC visibility push(hidden)
extern "C" {
void xenpv_page_fault();
bool xenpv_load(uint64_t va, uint64_t* out);
bool xenpv_store(uint64_t va, uint64_t val);
int xenpv_cmpxchg(uint64_t va, uint64_t* expected, uint64_t desired);
bool xenpv_fetch(uint64_t va);
void xenpv_fetch_ret();
[[noreturn]] void xenpv_switch_stack(uint64_t top, void (*fn)());
extern const uint64_t xenpv_extable[], xenpv_extable_end[];
extern void (*__init_array_start[])(), (*__init_array_end[])();
}
#pragma GCC visibility pop

// Hidden as the symbols above: the image is linked static, so a reference
// from one file of the platform to another stays RIP-relative.
#pragma GCC visibility push(hidden)

namespace pvmmu::guest::xenpv {

using pvmmu::xenpv::hypercall;

constexpr uint64_t kStackSize = 16384;
constexpr unsigned kMaxXenpvVcpus = 16;

// A vCPU's Transport (the hypercall page) and Memory (plain accesses whose
// faults entry.S turns into a false): transport.cc, fetch_probe.cc.
class XenpvCpu final : public Transport, public Memory {
public:
    long hypercall(unsigned op, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4) override;
    void relax() override;
    bool load(Va va, uint64_t& out) override;
    bool store(Va va, uint64_t val) override;
    uint64_t* direct(Va va, uint64_t) override;
    bool cmpxchg(Va va, uint64_t& expected, uint64_t desired, bool& swapped) override;
    bool fetch(Va va) override;
    void clean(Va) override {}   // x86 walkers are coherent with the data cache
};

// main.cc: the domain ends (after the console ring is drained).
void shutdown(unsigned reason);

// boot_info.cc: start_info as the hypervisor gave it, and as the library's BootInfo.
extern const start_info_t* g_si;
extern BootInfo g_boot;
BootInfo boot_info(const start_info_t& si, uint64_t initial_sp);

// console.cc: the console ring of a domU of Xen, or console_io.
bool use_console_ring(const start_info_t& si);
void console_drain();

// shared_info.cc: shared_info mapped over a page of the image's own.
bool map_shared_info(const start_info_t& si);
// The address of vCPU `vcpu`'s last page fault (its vcpu_info's CR2).
uint64_t fault_address(unsigned vcpu);

// pvmmu_op.cc: what only pvmmu knows, asked for once at boot.
void load_facts();

// vcpu.cc: the boot vCPU's stack and the code that runs on it.
uint64_t stack_top(unsigned id);
[[noreturn]] void boot_cpu();

} // namespace pvmmu::guest::xenpv

#pragma GCC visibility pop
