// core/vm_assist_rules.h: vm_assist's answers, Xen's checks in Xen's order.
#include <gtest/gtest.h>

#include "core/vm_assist_rules.h"

namespace pvmmu {
namespace {

TEST(VmAssist, XensChecksTypeFirstThenCommand)
{
    EXPECT_EQ(vm_assist_result(VMASST_CMD_enable, 6), -XEN_EINVAL);
    EXPECT_EQ(vm_assist_result(VMASST_CMD_enable, 31), -XEN_EINVAL);
    EXPECT_EQ(vm_assist_result(VMASST_CMD_enable, 64), -XEN_EINVAL);
    EXPECT_EQ(vm_assist_result(VMASST_CMD_enable, ~0u), -XEN_EINVAL);
    EXPECT_EQ(vm_assist_result(7, 6), -XEN_EINVAL);   // the type before the command
    EXPECT_EQ(vm_assist_result(7, VMASST_TYPE_pae_extended_cr3), -XEN_ENOSYS);
    EXPECT_EQ(vm_assist_result(VMASST_CMD_enable, VMASST_TYPE_4gb_segments), 0);
    EXPECT_EQ(vm_assist_result(VMASST_CMD_enable, VMASST_TYPE_4gb_segments_notify), 0);
    EXPECT_EQ(vm_assist_result(VMASST_CMD_enable, VMASST_TYPE_pae_extended_cr3), 0);
    EXPECT_EQ(vm_assist_result(VMASST_CMD_enable, VMASST_TYPE_writable_pagetables), 0);
    EXPECT_EQ(vm_assist_result(VMASST_CMD_enable, VMASST_TYPE_runstate_update_flag), 0);   // pv/runstate.cc
}

TEST(VmAssist, AssistsPvmmuLacksCannotBeEnabledButDisabled)
{
    for (uint32_t t : {uint32_t(VMASST_TYPE_architectural_iopl), uint32_t(VMASST_TYPE_m2p_strict)}) {
        EXPECT_EQ(vm_assist_result(VMASST_CMD_enable, t), -XEN_EINVAL) << t;
        EXPECT_EQ(vm_assist_result(VMASST_CMD_disable, t), 0) << t;
    }
}

} // namespace
} // namespace pvmmu
