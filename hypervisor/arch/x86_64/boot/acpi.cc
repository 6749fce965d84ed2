// RSDP → RSDT/XSDT → MADT, FADT → DSDT; see boot/acpi.h. Every table's checksum is checked
// before it is believed (a table's bytes sum to 0, ACPI §5.2).
#include "boot/acpi.h"

#include <string.h>

#include "boot/aml.h"
#include "mm/direct_map.h"

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

// The n-th table (from 0) of the RSDT or XSDT with this signature whose
// checksum holds, or nullptr.
const SdtHeader* find_table(const Rsdp& r, const char* signature, unsigned n = 0)
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
        if (t && memcmp(t->signature, signature, 4) == 0 && n-- == 0) return t;
    }
    return nullptr;
}

const Madt* find_madt(const Rsdp& r)
{
    const SdtHeader* t = find_table(r, "APIC");
    return t && t->length >= sizeof(Madt) ? reinterpret_cast<const Madt*>(t) : nullptr;
}

// The FADT's fields pvmmu reads (§5.2.9, table "FADT Format"): byte offsets,
// since the table grew over the revisions and `length` says how much of it
// a firmware wrote.
constexpr uint32_t kFadtDsdt = 40, kFadtSmiCmd = 48, kFadtAcpiEnable = 52, kFadtPm1aCnt = 64, kFadtPm1bCnt = 68,
                   kFadtXDsdt = 140, kFadtXPm1aCnt = 172, kFadtXPm1bCnt = 184;
constexpr uint8_t kSystemIo = 1;   // a Generic Address Structure's address space (§5.2.3.2)

template <typename T>
T field(const SdtHeader* t, uint32_t off)
{
    T v{};
    if (off + sizeof(T) <= t->length) memcpy(&v, reinterpret_cast<const uint8_t*>(t) + off, sizeof(T));
    return v;
}

// A PM1x_CNT port: the 64-bit GAS where it is there and in I/O space, else the 32-bit field.
uint16_t pm1_cnt(const SdtHeader* fadt, uint32_t legacy, uint32_t gas)
{
    if (gas + 12 <= fadt->length && field<uint8_t>(fadt, gas) == kSystemIo) {
        const uint64_t a = field<uint64_t>(fadt, gas + 4);
        if (a && a <= 0xffff) return uint16_t(a);
    }
    const uint32_t a = field<uint32_t>(fadt, legacy);
    return a <= 0xffff ? uint16_t(a) : 0;
}

const uint8_t* aml_of(const SdtHeader* t) { return reinterpret_cast<const uint8_t*>(t) + sizeof(SdtHeader); }

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

void acpi_find_power(uint64_t rsdp, PowerInfo& out)
{
    if (!rsdp) return;
    const Rsdp& r = *dmap<const Rsdp>(Maddr{rsdp});
    if (const SdtHeader* fadt = find_table(r, "FACP")) {
        out.pm1a_cnt = pm1_cnt(fadt, kFadtPm1aCnt, kFadtXPm1aCnt);
        out.pm1b_cnt = pm1_cnt(fadt, kFadtPm1bCnt, kFadtXPm1bCnt);
        const uint32_t smi = field<uint32_t>(fadt, kFadtSmiCmd);
        out.smi_cmd = smi <= 0xffff ? uint16_t(smi) : 0;
        out.acpi_enable = field<uint8_t>(fadt, kFadtAcpiEnable);
        const uint64_t x = field<uint64_t>(fadt, kFadtXDsdt), a = x ? x : field<uint32_t>(fadt, kFadtDsdt);
        const SdtHeader* dsdt = a ? table(a) : nullptr;
        if (dsdt && memcmp(dsdt->signature, "DSDT", 4) != 0) dsdt = nullptr;
        // \_S5 and pvpanic in the DSDT, or in an SSDT where a firmware put
        // them: the DSDT first (n = 0, when there is one), then each SSDT.
        for (unsigned n = dsdt ? 0 : 1;; ++n) {
            const SdtHeader* t = n == 0 ? dsdt : find_table(r, "SSDT", n - 1);
            if (!t) break;
            const size_t len = t->length - sizeof(SdtHeader);
            if (!out.s5) out.s5 = aml_find_s5(aml_of(t), len, out.slp_typa, out.slp_typb);
            if (!out.pvpanic_from_acpi) out.pvpanic_from_acpi = aml_find_pvpanic(aml_of(t), len, out.pvpanic_port);
        }
    }
}

} // namespace pvmmu::x86
