// The libvirt back end's host side (tools/run_libvirt_host.cc): which URIs
// name another machine, the host CPU in a capabilities XML, the description
// of libvirt's test driver (test:///default: a made-up host of fixed
// figures), and an upload refused by a driver without virStorageVolUpload
// (the test driver), which must leave no volume behind.
#include "run_libvirt_host.h"

#include <cstdlib>

#include <gtest/gtest.h>
#include <libvirt/virterror.h>

namespace pvmmu::run {
namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(LibvirtHost, RemoteUrisNameAHost)
{
    EXPECT_TRUE(libvirt_uri_remote("qemu+ssh://bench1/system"));
    EXPECT_TRUE(libvirt_uri_remote("qemu+tcp://127.0.0.1/system"));
    EXPECT_TRUE(libvirt_uri_remote("qemu://host.example/system"));
    EXPECT_FALSE(libvirt_uri_remote("qemu:///system"));
    EXPECT_FALSE(libvirt_uri_remote("qemu:///embed?root=/tmp/x"));
    EXPECT_FALSE(libvirt_uri_remote("test:///default"));
    EXPECT_FALSE(libvirt_uri_remote("nonsense"));
}

TEST(LibvirtHost, TheHostsCpuNotAGuests)
{
    // The shape of virConnectGetCapabilities' XML: <host><cpu>, then guests.
    const std::string caps = "<capabilities>\n  <host>\n    <uuid>x</uuid>\n    <cpu>\n      <arch>x86_64</arch>\n"
                             "      <model>Skylake-Client-IBRS</model>\n      <vendor>Intel</vendor>\n"
                             "      <topology sockets='1' dies='1' cores='2' threads='1'/>\n    </cpu>\n  </host>\n"
                             "  <guest>\n    <cpu><model>qemu64</model></cpu>\n  </guest>\n</capabilities>\n";
    EXPECT_EQ(libvirt_capabilities_cpu(caps), "Intel Skylake-Client-IBRS");
    // A host <cpu> with neither: nothing, not the guest's model.
    const std::string bare = "<capabilities><host><cpu><arch>i686</arch></cpu></host>"
                             "<guest><cpu><model>qemu64</model></cpu></guest></capabilities>";
    EXPECT_EQ(libvirt_capabilities_cpu(bare), "");
    EXPECT_EQ(libvirt_capabilities_cpu(""), "");
}

TEST(LibvirtHost, VersionsAsLibvirtWritesThem)
{
    EXPECT_EQ(libvirt_version_string(9000000), "9.0.0");
    EXPECT_EQ(libvirt_version_string(7002011), "7.2.11");
}

class LibvirtHostOnTestDriver : public ::testing::Test {
protected:
    void SetUp() override
    {
        virSetErrorFunc(nullptr, [](void*, virErrorPtr) {});
        conn_ = virConnectOpen("test:///default");
        ASSERT_NE(conn_, nullptr);
    }
    void TearDown() override
    {
        if (conn_) virConnectClose(conn_);
    }
    virConnectPtr conn_ = nullptr;
};

TEST_F(LibvirtHostOnTestDriver, DescribesTheHost)
{
    std::string json, why;
    ASSERT_TRUE(libvirt_host_json(conn_, "test:///default", json, why)) << why;
    virNodeInfo node{};
    ASSERT_EQ(virNodeGetInfo(conn_, &node), 0);
    EXPECT_TRUE(has(json, "\"uri\": \"test:///default\"")) << json;
    EXPECT_TRUE(has(json, "\"cpus\": " + std::to_string(node.cpus) + ",")) << json;
    EXPECT_TRUE(has(json, "\"mhz\": " + std::to_string(node.mhz) + ",")) << json;
    EXPECT_TRUE(has(json, "\"driver\": \"TEST\"")) << json;
    EXPECT_TRUE(has(json, "\"libvirt_version\": \"")) << json;
    // test:/// is local: this machine's kernel.
    EXPECT_TRUE(has(json, "\"kernel\": \"Linux ")) << json;
    EXPECT_EQ(json.front(), '{');
    EXPECT_EQ(json.back(), '}');
}

TEST_F(LibvirtHostOnTestDriver, AnUploadTheDriverRefusesLeavesNoVolume)
{
    virStoragePoolPtr pool = virStoragePoolLookupByName(conn_, "default-pool");
    ASSERT_NE(pool, nullptr);
    const int before = virStoragePoolNumOfVolumes(pool);
    std::string path, why;
    {
        PoolUploads up;
        EXPECT_FALSE(up.upload(conn_, "default-pool", "/proc/self/exe", "pvmmu-test-vol", path, why));
        EXPECT_TRUE(has(why, "cannot upload /proc/self/exe to volume pvmmu-test-vol")) << why;
    }
    EXPECT_EQ(virStoragePoolNumOfVolumes(pool), before);
    virStoragePoolFree(pool);
}

TEST_F(LibvirtHostOnTestDriver, AMissingPoolSaysHowToMakeOne)
{
    PoolUploads up;
    std::string path, why;
    EXPECT_FALSE(up.upload(conn_, "no-such-pool", "/proc/self/exe", "v", path, why));
    EXPECT_TRUE(has(why, "no storage pool 'no-such-pool'")) << why;
    EXPECT_TRUE(has(why, "--pool")) << why;
}

TEST_F(LibvirtHostOnTestDriver, AMissingFileIsNoVolume)
{
    PoolUploads up;
    std::string path, why;
    EXPECT_FALSE(up.upload(conn_, "default-pool", "/nonexistent/pvmmu-hv", "v", path, why));
    EXPECT_TRUE(has(why, "cannot read /nonexistent/pvmmu-hv")) << why;
}

} // namespace
} // namespace pvmmu::run
