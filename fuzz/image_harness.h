// The image fuzzer's harness (fuzz/image_fuzzer.cc; replayed by
// tests/arch/image_replay_test.cc): one input is a guest kernel file as a
// user hands it to pvmmu-run, an ELF or a bzImage around one. The bzImage is
// unpacked (tools/bzimage.cc, capped), the ELF read (pv/elf.cc) and
// placed (pv/place.cc) in domains of several sizes; an accepted image is
// built by the core's builder on a hosted machine and written through a fake
// memory that records every byte. Invariants: every write lands inside the
// frames of the domain being built and leaves its page tables as the builder
// made them; the entry, hypercall page, P2M list, start_info, shared_info,
// console ring, page tables and stack all lie inside the domain, apart.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace pvmmu::fuzz {

struct ImageOutcome {
    bool ok = true;
    std::string failure;     // the broken invariant
    unsigned accepted = 0;   // domain sizes the image was placed in
};

// The largest ELF a bzImage input may unpack to.
inline constexpr size_t kImageUnpackCap = size_t(8) << 20;

ImageOutcome run_image_input(const uint8_t* data, size_t size);

} // namespace pvmmu::fuzz
