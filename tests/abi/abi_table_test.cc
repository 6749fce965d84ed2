// docs/abi.md §12.1 and §12.2, the tables of the Xen PV ABI surface, against
// the code: every hypercall number 0-63 and every listed sub-op is put to the
// core's real dispatcher (on the sim, with every permission denied, so that
// nothing can change) and to the bare-metal hypervisor's list of its own
// hypercalls and sub-ops (pv/surface.h, which its dispatcher is bound
// to), and every instruction row's bytes to the emulator's decoder. A row
// that says -ENOSYS where the code answers, or the reverse, fails here.
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <pvmmu/abi.h>   // first: it sets the interface version for the headers below
#include <xen/grant_table.h>
#include <xen/physdev.h>

#include "pv/decode.h"
#include "pv/surface.h"
#include "core/grant_table.h"
#include "core/vm_assist_rules.h"
#include "support/core_fixture.h"

namespace pvmmu::test {
namespace {

using x86::arch_subop_known;
using x86::is_arch_hypercall;

// The cells of a markdown table row, trimmed, without the outer bars.
std::vector<std::string> cells(const std::string& line)
{
    std::vector<std::string> out;
    std::string cell;
    for (size_t i = 1; i < line.size(); ++i) {
        if (line[i] == '\\' && i + 1 < line.size() && line[i + 1] == '|') {
            cell += '|';
            ++i;
        } else if (line[i] == '|') {
            const size_t a = cell.find_first_not_of(' '), b = cell.find_last_not_of(' ');
            out.push_back(a == std::string::npos ? "" : cell.substr(a, b - a + 1));
            cell.clear();
        } else {
            cell += line[i];
        }
    }
    return out;
}

std::string unquote(std::string s)
{
    if (s.size() >= 2 && s.front() == '`' && s.back() == '`') return s.substr(1, s.size() - 2);
    return s;
}

// The rows of the table whose header row is `header`, in docs/abi.md.
std::vector<std::vector<std::string>> table(const std::string& header)
{
    std::ifstream in(PVMMU_ABI_MD);
    EXPECT_TRUE(in) << PVMMU_ABI_MD;
    std::vector<std::vector<std::string>> rows;
    std::string line;
    bool inside = false;
    while (std::getline(in, line)) {
        if (!inside) {
            inside = line == header;
            if (inside) std::getline(in, line);   // the |---| line
            continue;
        }
        if (line.empty() || line[0] != '|') break;
        rows.push_back(cells(line));
    }
    EXPECT_TRUE(inside) << "no table headed " << header;
    return rows;
}

uint64_t number(const std::string& s)
{
    char* end = nullptr;
    const uint64_t v = std::strtoull(s.c_str(), &end, 0);
    EXPECT_TRUE(!s.empty() && *end == 0) << "not a number: '" << s << "'";
    return v;
}

// §12.1: | hypercall | nr | sub-op | cmd | in | status | notes |
struct SubOp {
    std::string name, status;
};
struct Hypercall {
    std::string name, in, status;
    std::map<uint64_t, SubOp> subops;
};

const std::set<std::string> kStatuses = {"supported", "differs", "pvmmu", "-ENOSYS"};

std::map<uint64_t, Hypercall> hypercall_table()
{
    std::map<uint64_t, Hypercall> t;
    for (const auto& r : table("| hypercall | nr | sub-op | cmd | in | status | notes |")) {
        if (r.size() != 7) {
            ADD_FAILURE() << "a row of " << r.size() << " cells: " << (r.empty() ? "" : r[0]);
            continue;
        }
        const uint64_t nr = number(r[1]);
        const std::string& status = r[5];
        EXPECT_TRUE(kStatuses.count(status)) << r[0] << ": status '" << status << "'";
        if (r[2] == "—") {
            EXPECT_FALSE(t.count(nr)) << "hypercall " << nr << " listed twice";
            EXPECT_EQ(r[3], "") << r[0];
            EXPECT_TRUE(r[4] == "core" || r[4] == "hv" || r[4] == "—") << r[0] << ": in '" << r[4] << "'";
            EXPECT_EQ(r[4] == "—", status == "-ENOSYS") << r[0] << ": only an unanswered number is -ENOSYS";
            t[nr] = Hypercall{unquote(r[0]), r[4], status, {}};
            continue;
        }
        // A sub-op row follows its hypercall's row.
        auto h = t.find(nr);
        if (h == t.end() || h->second.name != unquote(r[0])) {
            ADD_FAILURE() << r[0] << " " << r[2] << ": no hypercall row before it";
            continue;
        }
        const uint64_t cmd = number(r[3]);
        EXPECT_FALSE(h->second.subops.count(cmd)) << r[0] << " sub-op " << cmd << " listed twice";
        EXPECT_EQ(r[4], "") << r[0] << " " << r[2] << ": `in` is the hypercall's";
        if (h->second.in == "—") { EXPECT_EQ(status, "-ENOSYS") << r[0] << " " << r[2] << ": its hypercall is -ENOSYS"; }
        h->second.subops[cmd] = SubOp{unquote(r[2]), status};
    }
    return t;
}

// The names of <xen/xen.h> and pvmmu's, so that a row's name and number agree.
#define HC(name) {#name, __HYPERVISOR_##name}
const std::map<std::string, unsigned> kNumbers = {
    HC(set_trap_table), HC(mmu_update), HC(set_gdt), HC(stack_switch), HC(set_callbacks),
    HC(fpu_taskswitch), HC(sched_op_compat), HC(platform_op), HC(set_debugreg), HC(get_debugreg),
    HC(update_descriptor), HC(memory_op), HC(multicall), HC(update_va_mapping), HC(set_timer_op),
    HC(event_channel_op_compat), HC(xen_version), HC(console_io), HC(physdev_op_compat),
    HC(grant_table_op), HC(vm_assist), HC(update_va_mapping_otherdomain), HC(iret), HC(vcpu_op),
    HC(set_segment_base), HC(mmuext_op), HC(xsm_op), HC(nmi_op), HC(sched_op), HC(callback_op),
    HC(xenoprof_op), HC(event_channel_op), HC(physdev_op), HC(hvm_op), HC(sysctl), HC(domctl),
    HC(kexec_op), HC(tmem_op), HC(argo_op), HC(xenpmu_op), HC(dm_op), HC(hypfs_op), HC(arch_0),
    HC(arch_1), HC(pvmmu_op),
};
#undef HC

// The sub-ops' names (what a guest's headers define, pvmmu's included).
#define S(name) {#name, uint64_t(name)}
const std::map<std::string, uint64_t> kSubOpNumbers = {
    S(MMU_NORMAL_PT_UPDATE), S(MMU_MACHPHYS_UPDATE), S(MMU_PT_UPDATE_PRESERVE_AD),
    S(MMU_PT_UPDATE_NO_TRANSLATE), S(MMU_FLAG_RANGE_UPDATE), S(XENMEM_increase_reservation),
    S(XENMEM_decrease_reservation), S(XENMEM_maximum_ram_page), S(XENMEM_current_reservation),
    S(XENMEM_maximum_reservation), S(XENMEM_machphys_mfn_list), S(XENMEM_populate_physmap),
    S(XENMEM_add_to_physmap), S(XENMEM_memory_map), S(XENMEM_machine_memory_map), S(XENMEM_exchange),
    S(XENMEM_machphys_mapping), S(XENMEM_set_memory_map), S(XENMEM_maximum_gpfn), S(XENMEM_remove_from_physmap),
    S(XENMEM_set_pod_target), S(XENMEM_get_pod_target), S(XENMEM_add_to_physmap_batch),
    S(XENMEM_machphys_compat_mfn_list), S(XENMEM_get_vnumainfo), S(XENMEM_acquire_resource), S(XENVER_version),
    S(XENVER_extraversion), S(XENVER_compile_info), S(XENVER_capabilities), S(XENVER_changeset),
    S(XENVER_platform_parameters), S(XENVER_get_features), S(XENVER_pagesize), S(XENVER_guest_handle),
    S(XENVER_commandline), S(XENVER_build_id), S(CONSOLEIO_write), S(CONSOLEIO_read), S(GNTTABOP_map_grant_ref),
    S(GNTTABOP_unmap_grant_ref), S(GNTTABOP_setup_table), S(GNTTABOP_dump_table), S(GNTTABOP_transfer),
    S(GNTTABOP_copy), S(GNTTABOP_query_size), S(GNTTABOP_unmap_and_replace), S(GNTTABOP_set_version),
    S(GNTTABOP_get_status_frames), S(GNTTABOP_get_version), S(GNTTABOP_swap_grant_ref), S(GNTTABOP_cache_flush),
    S(VMASST_TYPE_4gb_segments), S(VMASST_TYPE_4gb_segments_notify), S(VMASST_TYPE_writable_pagetables),
    S(VMASST_TYPE_pae_extended_cr3), S(VMASST_TYPE_architectural_iopl), S(VMASST_TYPE_runstate_update_flag),
    S(VMASST_TYPE_m2p_strict), S(VCPUOP_initialise), S(VCPUOP_up), S(VCPUOP_down), S(VCPUOP_is_up),
    S(VCPUOP_get_runstate_info), S(VCPUOP_register_runstate_memory_area), S(VCPUOP_set_periodic_timer),
    S(VCPUOP_stop_periodic_timer), S(VCPUOP_set_singleshot_timer), S(VCPUOP_stop_singleshot_timer),
    S(VCPUOP_register_vcpu_info), S(VCPUOP_send_nmi), S(VCPUOP_get_physid),
    S(VCPUOP_register_vcpu_time_memory_area), S(MMUEXT_PIN_L1_TABLE), S(MMUEXT_PIN_L2_TABLE),
    S(MMUEXT_PIN_L3_TABLE), S(MMUEXT_PIN_L4_TABLE), S(MMUEXT_UNPIN_TABLE), S(MMUEXT_NEW_BASEPTR),
    S(MMUEXT_TLB_FLUSH_LOCAL), S(MMUEXT_INVLPG_LOCAL), S(MMUEXT_TLB_FLUSH_MULTI), S(MMUEXT_INVLPG_MULTI),
    S(MMUEXT_TLB_FLUSH_ALL), S(MMUEXT_INVLPG_ALL), S(MMUEXT_FLUSH_CACHE), S(MMUEXT_SET_LDT),
    S(MMUEXT_NEW_USER_BASEPTR), S(MMUEXT_CLEAR_PAGE), S(MMUEXT_COPY_PAGE), S(MMUEXT_FLUSH_CACHE_GLOBAL),
    S(MMUEXT_MARK_SUPER), S(MMUEXT_UNMARK_SUPER), S(SCHEDOP_yield), S(SCHEDOP_block), S(SCHEDOP_shutdown),
    S(SCHEDOP_poll), S(SCHEDOP_remote_shutdown), S(SCHEDOP_shutdown_code), S(SCHEDOP_watchdog),
    S(SCHEDOP_pin_override), S(CALLBACKOP_register), S(CALLBACKOP_unregister), S(EVTCHNOP_bind_interdomain),
    S(EVTCHNOP_bind_virq), S(EVTCHNOP_bind_pirq), S(EVTCHNOP_close), S(EVTCHNOP_send), S(EVTCHNOP_status),
    S(EVTCHNOP_alloc_unbound), S(EVTCHNOP_bind_ipi), S(EVTCHNOP_bind_vcpu), S(EVTCHNOP_unmask),
    S(EVTCHNOP_reset), S(EVTCHNOP_init_control), S(EVTCHNOP_expand_array), S(EVTCHNOP_set_priority),
    S(PHYSDEVOP_IRQ_UNMASK_NOTIFY), S(PHYSDEVOP_irq_status_query), S(PHYSDEVOP_set_iopl),
    S(PHYSDEVOP_set_iobitmap), S(PHYSDEVOP_apic_read), S(PHYSDEVOP_apic_write), S(PHYSDEVOP_alloc_irq_vector),
    S(PHYSDEVOP_free_irq_vector), S(PHYSDEVOP_eoi), S(PHYSDEVOP_map_pirq), S(PHYSDEVOP_unmap_pirq),
    S(PHYSDEVOP_manage_pci_add), S(PHYSDEVOP_manage_pci_remove), S(PHYSDEVOP_pirq_eoi_gmfn_v1),
    S(PHYSDEVOP_restore_msi), S(PHYSDEVOP_manage_pci_add_ext), S(PHYSDEVOP_setup_gsi),
    S(PHYSDEVOP_get_free_pirq), S(PHYSDEVOP_pci_mmcfg_reserved), S(PHYSDEVOP_pci_device_add),
    S(PHYSDEVOP_pci_device_remove), S(PHYSDEVOP_restore_msi_ext), S(PHYSDEVOP_pirq_eoi_gmfn_v2),
    S(PHYSDEVOP_dbgp_op), S(PHYSDEVOP_prepare_msix), S(PHYSDEVOP_release_msix), S(PVMMUOP_deny),
    S(PVMMUOP_vcpu_counters), S(PVMMUOP_install_retries), S(PVMMUOP_facts), S(PVMMUOP_check_invariants),
    S(PVMMUOP_vcpu_calls),
};
#undef S

TEST(AbiTable, RowsAreWellFormedAndNamedAsTheHeaders)
{
    const auto t = hypercall_table();
    EXPECT_GE(t.size(), 40u);
    for (const auto& [nr, h] : t) {
        ASSERT_TRUE(kNumbers.count(h.name)) << h.name;
        EXPECT_EQ(kNumbers.at(h.name), nr) << h.name;
        for (const auto& [cmd, sub] : h.subops) {
            if (sub.name == "(none)") continue;   // a number the headers do not name
            ASSERT_TRUE(kSubOpNumbers.count(sub.name)) << h.name << ": add " << sub.name << " to kSubOpNumbers";
            EXPECT_EQ(kSubOpNumbers.at(sub.name), cmd) << h.name << " " << sub.name;
        }
    }
}

// Every permission denied: a command the dispatcher knows fails with -EPERM
// (or -EFAULT, -EINVAL for an argument), one it does not know with -ENOSYS,
// which every handler checks first; nothing changes either way.
class AbiTableTest : public CoreTest {
protected:
    void SetUp() override
    {
        CoreTest::SetUp();
        for (unsigned p = 0; p < unsigned(Perm::Count); ++p) d->policy.deny(Perm(p));
        // A grant table, as a platform gives one (grant_table_op is the core's there).
        grants = std::make_unique<GrantTable>(kDom, GrantLimits{}, GrantStorage{&table_frame, 1, active, maptrack, 1});
        d->grants = grants.get();
    }

    Mfn table_frame = lay.mfn(1000);
    ActiveGrant active[gnt::kEntriesPerFrame];
    MapTrack maptrack[1];
    std::unique_ptr<GrantTable> grants;

    // A machine address beyond memory: no frame to act on.
    static constexpr uint64_t kNoFrame = 1ull << 40;

    // What the core answers to hypercall nr's sub-op cmd.
    long core_subop(uint64_t nr, uint64_t cmd)
    {
        switch (nr) {
        case __HYPERVISOR_mmu_update: {
            const mmu_update_t req{(kNoFrame << 12) | cmd, 0};
            return m.call(v0(), nr, uint64_t(&req), 1, 0, DOMID_SELF);
        }
        case __HYPERVISOR_mmuext_op: {
            mmuext_op_t op{};
            op.cmd = unsigned(cmd);
            op.arg1.mfn = kNoFrame;
            op.arg2.vcpumask.p = reinterpret_cast<void*>(kBadGuestPtr);
            return m.call(v0(), nr, uint64_t(&op), 1, 0, DOMID_SELF);
        }
        default:
            return m.call(v0(), nr, cmd, kBadGuestPtr, 3, DOMID_SELF);
        }
    }
};

TEST_F(AbiTableTest, EveryHypercallNumberIsAnsweredExactlyAsTheTableSays)
{
    const auto t = hypercall_table();
    Snapshot before(m);
    for (uint64_t nr = 0; nr < 64; ++nr) {
        const auto h = t.find(nr);
        const std::string in = h == t.end() ? "—" : h->second.in;
        // Arguments no hypercall can act on: NULL lists of one entry, flush type 3, xen_version 0.
        const long rc = m.call(v0(), nr, 0, 1, 3, DOMID_SELF);
        EXPECT_EQ(rc != -XEN_ENOSYS, in == "core") << "hypercall " << nr << " on the core: " << rc;
        EXPECT_EQ(is_arch_hypercall(nr), in == "hv") << "hypercall " << nr << " in pv/surface.h";
    }
    EXPECT_EQ(m.call(v0(), 64, 0, 1, 3, DOMID_SELF), -XEN_ENOSYS);
    EXPECT_FALSE(is_arch_hypercall(64));
    EXPECT_TRUE(unchanged(before, m));
}

// Sub-ops: the listed ones, every number between them and a few after, and
// 1000; a hypercall without sub-op rows must take any first argument.
TEST_F(AbiTableTest, EverySubOpIsAnsweredExactlyAsTheTableSays)
{
    const auto t = hypercall_table();
    Snapshot before(m);
    for (const auto& [nr, h] : t) {
        if (nr == __HYPERVISOR_vm_assist) continue;   // its rows are types: below
        if (h.subops.empty()) {
            if (h.in == "core") { EXPECT_NE(core_subop(nr, 1000), -XEN_ENOSYS) << h.name << " has sub-ops"; }
            if (h.in == "hv") { EXPECT_TRUE(arch_subop_known(unsigned(nr), 1000)) << h.name << " has sub-ops"; }
            continue;
        }
        std::vector<uint64_t> cmds;
        // mmu_update's command is 3 bits of ptr.
        const uint64_t last = nr == __HYPERVISOR_mmu_update ? 7 : h.subops.rbegin()->first + 8;
        for (uint64_t c = 0; c <= last; ++c) cmds.push_back(c);
        if (nr != __HYPERVISOR_mmu_update) cmds.push_back(1000);
        for (uint64_t cmd : cmds) {
            const auto s = h.subops.find(cmd);
            const bool listed = s != h.subops.end() && s->second.status != "-ENOSYS";
            const std::string what = h.name + " sub-op " + std::to_string(cmd) +
                                     (s == h.subops.end() ? " (no row)" : " " + s->second.name);
            const long rc = core_subop(nr, cmd);
            EXPECT_EQ(rc != -XEN_ENOSYS, h.in == "core" && listed) << what << " on the core: " << rc;
            const bool arch = is_arch_hypercall(nr) && arch_subop_known(unsigned(nr), cmd);
            EXPECT_EQ(arch, h.in == "hv" && listed) << what << " in pv/surface.h";
        }
    }
    EXPECT_TRUE(unchanged(before, m));
}

// vm_assist's rows are the types (core/vm_assist_rules.h): a
// listed type can be disabled; `supported` ones enabled, `differs` ones not.
TEST(AbiTable, VmAssistTypesAsTheTableSays)
{
    const auto t = hypercall_table();
    ASSERT_TRUE(t.count(__HYPERVISOR_vm_assist));
    const Hypercall& h = t.at(__HYPERVISOR_vm_assist);
    EXPECT_EQ(h.in, "hv");
    for (uint32_t type = 0; type < 64; ++type) {
        const auto s = h.subops.find(type);
        const long off = vm_assist_result(VMASST_CMD_disable, type);
        const long on = vm_assist_result(VMASST_CMD_enable, type);
        if (s == h.subops.end()) {
            EXPECT_EQ(off, -XEN_EINVAL) << "vm_assist type " << type << " has no row";
            continue;
        }
        EXPECT_EQ(off, 0) << s->second.name;
        EXPECT_EQ(on == 0, s->second.status == "supported") << s->second.name;
        EXPECT_EQ(vm_assist_result(VMASST_CMD_disable + 1, type), -XEN_ENOSYS) << s->second.name;
    }
}

// §12.2: | instruction | bytes | msr | status | notes |
TEST(AbiTable, EveryInstructionRowIsEmulatedExactlyAsTheTableSays)
{
    const auto rows = table("| instruction | bytes | msr | status | notes |");
    EXPECT_GE(rows.size(), 30u);
    for (const auto& r : rows) {
        ASSERT_EQ(r.size(), 5u) << (r.empty() ? "" : r[0]);
        std::vector<uint8_t> b;
        std::istringstream hex(r[1]);
        for (unsigned byte; hex >> std::hex >> byte;) b.push_back(uint8_t(byte));
        ASSERT_FALSE(b.empty()) << r[0];
        const unsigned n = unsigned(b.size());
        const uint32_t msr = r[2].empty() ? 0 : uint32_t(number(r[2]));
        bool emulated;
        if (x86::is_forced_cpuid(b.data(), n)) emulated = true;
        else if (b[0] == 0xcd) emulated = x86::software_int_vector(b.data(), n, b[1] * 8u + 2) >= 0;   // the gate's #GP
        else emulated = x86::emulated(x86::decode_privileged(b.data(), n), msr);
        const std::string& status = r[3];
        EXPECT_TRUE(status == "emulated" || status == "differs" || status == "#GP" || status == "native")
            << r[0] << ": status '" << status << "'";
        EXPECT_EQ(emulated, status == "emulated" || status == "differs") << r[0] << " (" << r[1] << ")";
    }
}

} // namespace
} // namespace pvmmu::test
