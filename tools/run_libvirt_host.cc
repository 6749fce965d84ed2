// The libvirt back end's host side (run_libvirt_host.h): a host's description
// for a benchmark sweep (pvmmu-run --describe-host), and pvmmu's images
// uploaded to a remote host's storage pool.
#include "run_libvirt_host.h"

#include <atomic>
#include <cstdio>
#include <memory>
#include <thread>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <libvirt/virterror.h>

#include "run_libvirt.h"

namespace pvmmu::run {

namespace {

std::string last_error()
{
    const virErrorPtr e = virGetLastError();
    return e && e->message ? e->message : "unknown libvirt error";
}

void quiet_errors(void*, virErrorPtr) {}

std::string json_string(const std::string& s)
{
    std::string j = "\"";
    for (const char c : s) {
        if (c == '"' || c == '\\') {
            j += '\\', j += c;
        } else if (static_cast<unsigned char>(c) < 0x20) {
            char u[8];
            std::snprintf(u, sizeof(u), "\\u%04x", unsigned(static_cast<unsigned char>(c)));
            j += u;
        } else {
            j += c;
        }
    }
    return j + "\"";
}

// The text of the first <tag>...</tag> in xml[from, to); "" if none.
std::string element(const std::string& xml, const std::string& tag, size_t from, size_t to)
{
    const size_t open = xml.find("<" + tag + ">", from);
    if (open == std::string::npos || open >= to) return "";
    const size_t start = open + tag.size() + 2;
    const size_t end = xml.find("</" + tag + ">", start);
    return end == std::string::npos || end > to ? "" : xml.substr(start, end - start);
}


// For virStreamSendAll: the next bytes of the file.
int read_file(virStreamPtr, char* data, size_t n, void* opaque)
{
    const int fd = *static_cast<int*>(opaque);
    for (;;) {
        const ssize_t r = read(fd, data, n);
        if (r >= 0 || errno != EINTR) return int(r);
    }
}

} // namespace

bool libvirt_uri_remote(const std::string& uri)
{
    const size_t sep = uri.find("://");
    return sep != std::string::npos && sep + 3 < uri.size() && uri[sep + 3] != '/';
}

std::string libvirt_capabilities_cpu(const std::string& caps)
{
    const size_t host = caps.find("<host>");
    const size_t host_end = caps.find("</host>");
    if (host == std::string::npos || host_end == std::string::npos) return "";
    const size_t cpu = caps.find("<cpu>", host);
    const size_t cpu_end = caps.find("</cpu>", host);
    if (cpu == std::string::npos || cpu_end == std::string::npos || cpu_end > host_end) return "";
    const std::string vendor = element(caps, "vendor", cpu, cpu_end), model = element(caps, "model", cpu, cpu_end);
    return vendor.empty() ? model : model.empty() ? vendor : vendor + " " + model;
}

std::string libvirt_version_string(unsigned long v)
{
    return std::to_string(v / 1000000) + "." + std::to_string(v / 1000 % 1000) + "." + std::to_string(v % 1000);
}

bool libvirt_host_json(virConnectPtr conn, const std::string& uri, std::string& json, std::string& why)
{
    virNodeInfo node{};
    if (virNodeGetInfo(conn, &node) < 0) {
        why = "virNodeGetInfo: " + last_error();
        return false;
    }
    // The rest is description: a driver that lacks one call gives null there.
    std::string cpu, hostname, type;
    if (char* caps = virConnectGetCapabilities(conn)) {
        cpu = libvirt_capabilities_cpu(caps);
        free(caps);
    }
    if (char* h = virConnectGetHostname(conn)) {
        hostname = h;
        free(h);
    }
    if (const char* t = virConnectGetType(conn)) type = t;
    unsigned long hv = 0, lib = 0;
    const bool has_hv = virConnectGetVersion(conn, &hv) == 0 && hv;
    const bool has_lib = virConnectGetLibVersion(conn, &lib) == 0;
    std::string kernel = "null";
    utsname u{};
    if (!libvirt_uri_remote(uri) && uname(&u) == 0) kernel = json_string(std::string(u.sysname) + " " + u.release);
    auto str_or_null = [](const std::string& s) { return s.empty() ? std::string("null") : json_string(s); };
    json = "{\"uri\": " + json_string(uri) + ", \"hostname\": " + str_or_null(hostname) +
           ", \"cpu_model\": " + str_or_null(cpu) + ", \"arch\": " + json_string(node.model) +
           ", \"cpus\": " + std::to_string(node.cpus) + ", \"mhz\": " + std::to_string(node.mhz) +
           ", \"numa_nodes\": " + std::to_string(node.nodes) + ", \"sockets\": " + std::to_string(node.sockets) +
           ", \"cores_per_socket\": " + std::to_string(node.cores) + ", \"threads_per_core\": " +
           std::to_string(node.threads) + ", \"memory_kib\": " + std::to_string(node.memory) +
           ", \"kernel\": " + kernel + ", \"driver\": " + str_or_null(type) +
           ", \"driver_version\": " + (has_hv ? json_string(libvirt_version_string(hv)) : "null") +
           ", \"libvirt_version\": " + (has_lib ? json_string(libvirt_version_string(lib)) : "null") + "}";
    return true;
}

bool PoolUploads::upload(virConnectPtr conn, const std::string& pool_name, const std::string& file,
                         const std::string& name, std::string& path, std::string& why)
{
    const int fd = open(file.c_str(), O_RDONLY | O_CLOEXEC);
    struct stat st{};
    if (fd < 0 || fstat(fd, &st) < 0) {
        if (fd >= 0) close(fd);
        why = "cannot read " + file;
        return false;
    }
    std::unique_ptr<int, void (*)(int*)> fd_closer(new int(fd), [](int* p) { close(*p), delete p; });
    virStoragePoolPtr pool = virStoragePoolLookupByName(conn, pool_name.c_str());
    if (!pool) {
        why = "no storage pool '" + pool_name + "' there to upload " + file + " to (" + last_error() +
              "; name one with --pool, or define it: virsh pool-define-as NAME dir --target DIR)";
        return false;
    }
    // Readable by all: the host's QEMU may run as another user (libvirt-qemu),
    // and seclabel none (run_libvirt_xml.cc) means libvirt chowns nothing.
    const std::string xml = "<volume><name>" + name + "</name><capacity unit='bytes'>" +
                            std::to_string(st.st_size) + "</capacity><target><format type='raw'/>"
                            "<permissions><mode>0644</mode></permissions></target></volume>";
    virStorageVolPtr vol = virStorageVolCreateXML(pool, xml.c_str(), 0);
    virStoragePoolFree(pool);
    if (!vol) {
        why = "cannot make volume " + name + " in pool " + pool_name + ": " + last_error();
        return false;
    }
    vols_.push_back(vol);
    // A blocking stream: the upload finishes before the domain starts.
    virStreamPtr s = virStreamNew(conn, 0);
    int read_fd = fd;
    bool ok = s && virStorageVolUpload(vol, s, 0, static_cast<unsigned long long>(st.st_size), 0) == 0;
    // virStreamSendAll aborts the stream itself when it fails.
    ok = ok && virStreamSendAll(s, read_file, &read_fd) == 0 && virStreamFinish(s) == 0;
    if (!ok) why = "cannot upload " + file + " to volume " + name + ": " + last_error();
    if (s) virStreamFree(s);
    if (!ok) return false;
    char* p = virStorageVolGetPath(vol);
    if (!p) {
        why = "volume " + name + " has no path: " + last_error();
        return false;
    }
    path = p;
    free(p);
    return true;
}

void PoolUploads::remove()
{
    for (virStorageVolPtr v : vols_) {
        virStorageVolDelete(v, 0);
        virStorageVolFree(v);
    }
    vols_.clear();
}

int libvirt_describe_host(const Options& o, std::string& why)
{
    const std::string uri = o.platform_arg.empty() ? libvirt_default_uri() : o.platform_arg;
    virInitialize();
    virSetErrorFunc(nullptr, quiet_errors);
    // The embedded driver needs an event loop that runs (it talks to QEMU
    // when it probes its capabilities); a thread of ours, as in a run.
    virEventRegisterDefaultImpl();
    std::atomic<bool> quit{false};
    std::thread loop([&quit] {
        while (!quit) virEventRunDefaultImpl();
    });
    std::string json;
    bool ok = false;
    virConnectPtr conn = virConnectOpen(uri.c_str());
    if (conn) {
        ok = libvirt_host_json(conn, uri, json, why);
        virConnectClose(conn);
    } else {
        why = "cannot connect to " + uri + ": " + last_error();
    }
    quit = true;
    virEventAddTimeout(0, [](int timer, void*) { virEventRemoveTimeout(timer); }, nullptr, nullptr);
    loop.join();
    if (!conn) return kSkipped;
    if (!ok) return kCrashed;
    std::printf("%s\n", json.c_str());
    return 0;
}

} // namespace pvmmu::run
