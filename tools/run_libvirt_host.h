// The libvirt back end's host side (run_libvirt_host.cc):
// what a benchmark sweep over several hosts needs from each one, its
// description, and, for a host that is not this machine, pvmmu's images
// uploaded to one of its storage pools so nothing is copied by hand.
#pragma once

#include <string>
#include <vector>

#include <libvirt/libvirt.h>

namespace pvmmu::run {

// Whether a URI names another machine: a host after "scheme://"
// (qemu+ssh://host/system, qemu+tcp://127.0.0.1/system). qemu:///system,
// qemu:///embed?root=... and test:///default run here and read our files.
bool libvirt_uri_remote(const std::string& uri);

// The host behind an open connection as one JSON object: libvirt's hostname,
// the CPU (capabilities' host model and vendor, virNodeGetInfo's arch,
// sockets, cores, threads, MHz), memory, the driver and its version
// (virConnectGetType/GetVersion: QEMU's for the QEMU driver), the daemon's
// libvirt (virConnectGetLibVersion) and, for a local URI, this kernel's
// release (libvirt's API has none for a remote one: null there).
bool libvirt_host_json(virConnectPtr conn, const std::string& uri, std::string& json, std::string& why);

// The host CPU's vendor and model in a capabilities XML (the <cpu> of
// <host>, not a guest's), "" where it names none (the test driver).
std::string libvirt_capabilities_cpu(const std::string& caps);

// A version number as libvirt encodes it (major * 1000000 + minor * 1000 + micro).
std::string libvirt_version_string(unsigned long v);

// Local files uploaded as volumes of a storage pool on the connection's host
// (virStorageVolCreateXML, then virStorageVolUpload through a stream), for
// one run: the volumes are deleted with this object.
class PoolUploads {
public:
    PoolUploads() = default;
    PoolUploads(const PoolUploads&) = delete;
    PoolUploads& operator=(const PoolUploads&) = delete;
    ~PoolUploads() { remove(); }

    // `file` as the volume `name` of `pool`; its path on the host in `path`.
    bool upload(virConnectPtr conn, const std::string& pool, const std::string& file, const std::string& name,
                std::string& path, std::string& why);
    // Deletes the volumes uploaded so far.
    void remove();

private:
    std::vector<virStorageVolPtr> vols_;
};

} // namespace pvmmu::run
