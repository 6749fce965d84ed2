// bzImage's XZ payloads where CMake found no liblzma (liblzma-dev):
// pvmmu-run still builds, and refuses such a kernel saying why.
#include "bzimage.h"

namespace pvmmu::run {

bool bzimage_unxz(const uint8_t*, size_t, size_t, std::vector<uint8_t>&, std::string& why)
{
    why = "its payload is XZ-compressed and pvmmu-run was built without liblzma (liblzma-dev was missing when "
          "CMake ran: ./pvmmu deps, then rebuild)";
    return false;
}

} // namespace pvmmu::run
