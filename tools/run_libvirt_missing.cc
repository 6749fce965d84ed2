// The libvirt back end where CMake found no libvirt (libvirt-dev): pvmmu-run
// still builds, and every --platform libvirt run is a SKIP that says why.
#include "run_libvirt.h"

namespace pvmmu::run {

const bool kLibvirtBuilt = false;

int libvirt_prepare(const std::vector<Domain>&, const Options&, Launch&, std::string& why)
{
    why = "pvmmu-run was built without libvirt (libvirt-dev was missing when CMake ran: ./pvmmu deps, then "
          "rebuild)";
    return kSkipped;
}

int libvirt_describe_host(const Options&, std::string& why)
{
    why = "pvmmu-run was built without libvirt (libvirt-dev was missing when CMake ran: ./pvmmu deps, then "
          "rebuild)";
    return kSkipped;
}

} // namespace pvmmu::run
