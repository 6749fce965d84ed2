// RSDP → RSDT/XSDT → MADT; see arch/acpi.h. Every table's checksum is checked
// before it is believed (a table's bytes sum to 0, ACPI §5.2).
#include "arch/acpi.h"

#include <string.h>

#include "arch/direct_map.h"

namespace pvmmu::x86 {

namespace {

struct __attribute__((packed)) Rsdp {
    char signature[8];   // "RSD PTR "
    uint8_t checksum;    // first 20 bytes
    char oem[6];
    uint8_t revision;    // 0: ACPI 1.0 (RSDT only), 2+: XSDT fields valid
    uint32_t rsdt;
    uint32_t length;
    uint64_t xsdt;
    uint8_t xchecksum;   // all `length` bytes
    uint8_t reserved[3];
};
static_assert(sizeof(Rsdp) == 36);

struct __attribute__((packed)) SdtHeader {
    char signature[4];
    uint32_t length;
    uint8_t revision, checksum;
    char oem[6], oem_table[8];
    uint32_t oem_revision, creator, creator_revision;
};
static_assert(sizeof(SdtHeader) == 36);

struct __attribute__((packed)) Madt {
    SdtHeader h;
    uint32_t lapic;
    uint32_t flags;
};

// MADT entry types (§5.2.12, table "Interrupt Controller Structure Types").
constexpr uint8_t kLocalApic = 0, kLapicOverride = 5, kLocalX2apic = 9;
constexpr uint32_t kEnabled = 1u << 0;

bool sum_ok(const void* p, uint64_t n)
{
    uint8_t s = 0;
    for (uint64_t i = 0; i < n; ++i) s = uint8_t(s + static_cast<const uint8_t*>(p)[i]);
    return s == 0;
}

const Rsdp* scan(uint64_t from, uint64_t len)
{
    for (uint64_t a = from; a + sizeof(Rsdp) <= from + len; a += 16) {
        const Rsdp* r = dmap<const Rsdp>(Maddr{a});
        if (memcmp(r->signature, "RSD PTR ", 8) == 0 && sum_ok(r, 20)) return r;
    }
    return nullptr;
}

// §5.2.5.1: the first KiB of the EBDA (its segment is at 0x40e in the BIOS
// data area), then the BIOS ROM area 0xe0000-0xfffff, on 16-byte boundaries.
const Rsdp* find_rsdp()
{
    const uint64_t ebda = uint64_t(*dmap<const uint16_t>(Maddr{0x40e})) << 4;
    if (ebda >= 0x80000 && ebda < 0xa0000)
        if (const Rsdp* r = scan(ebda, 1024)) return r;
    return scan(0xe0000, 0x20000);
}

const SdtHeader* table(uint64_t phys)
{
    const SdtHeader* h = dmap<const SdtHeader>(Maddr{phys});
    return h->length >= sizeof(SdtHeader) && sum_ok(h, h->length) ? h : nullptr;
}

const Madt* find_madt(const Rsdp& r)
{
    const bool x = r.revision >= 2 && r.xsdt && sum_ok(&r, r.length);
    const SdtHeader* root = table(x ? r.xsdt : r.rsdt);
    if (!root) return nullptr;
    const uint64_t entry = x ? 8 : 4;
    const uint8_t* p = reinterpret_cast<const uint8_t*>(root) + sizeof(SdtHeader);
    for (uint64_t off = 0; off + entry <= root->length - sizeof(SdtHeader); off += entry) {
        uint64_t a = 0;
        memcpy(&a, p + off, entry);
        const SdtHeader* t = table(a);
        if (t && memcmp(t->signature, "APIC", 4) == 0 && t->length >= sizeof(Madt))
            return reinterpret_cast<const Madt*>(t);
    }
    return nullptr;
}

} // namespace

int acpi_find_cpus(CpuList& out)
{
    const Rsdp* r = find_rsdp();
    if (!r) return -1;
    out.rsdp = reinterpret_cast<uint64_t>(r) - kDirectMap;
    const Madt* m = find_madt(*r);
    if (!m) return -1;
    out.lapic_phys = m->lapic;

    const uint8_t* p = reinterpret_cast<const uint8_t*>(m) + sizeof(Madt);
    const uint8_t* end = reinterpret_cast<const uint8_t*>(m) + m->h.length;
    while (p + 2 <= end && p[1] >= 2 && p + p[1] <= end) {
        const uint8_t type = p[0], len = p[1];
        if (type == kLocalApic && len >= 8) {
            uint32_t flags;
            memcpy(&flags, p + 4, 4);
            if (flags & kEnabled) {
                if (out.count < kMaxCpus) out.apic_ids[out.count++] = p[3];
                else ++out.ignored;
            }
        } else if (type == kLapicOverride && len >= 12) {
            memcpy(&out.lapic_phys, p + 4, 8);
        } else if (type == kLocalX2apic) {
            ++out.ignored;   // APIC IDs above 254 need x2APIC mode (later)
        }
        p += len;
    }
    return out.count ? 0 : -1;
}

} // namespace pvmmu::x86
