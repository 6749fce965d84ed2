// The frame table (docs/design.md §4): for every machine frame its owner, a general
// reference count, a type with a type count, and the validated / pinned flags,
// plus the per-page lock that serializes software writers of a page-table page.
#pragma once

#include <atomic>

#include "core/pte.h"
#include "core/spinlock.h"

namespace pvmmu {

// Page types. The page-table types share their number with their level.
enum class PageType : uint8_t { None = 0, L1 = 1, L2 = 2, L3 = 3, L4 = 4, Writable = 5 };

constexpr PageType table_type(Level l) { return PageType(uint8_t(l)); }
constexpr bool is_table_type(PageType t) { return t >= PageType::L1 && t <= PageType::L4; }
static_assert(table_type(Level::L3) == PageType::L3);

// Owners that are not domains: Xen's reserved domain ids.
inline constexpr DomId kOwnerFree = 0x7FF4;   // DOMID_INVALID
inline constexpr DomId kOwnerXen = 0x7FF2;    // DOMID_XEN: hypervisor frames
inline constexpr DomId kOwnerIo = 0x7FF1;     // DOMID_IO: device memory

// type_info word: one atomic so type, count and flags change together.
namespace ti {
inline constexpr uint64_t kCountMask = 0xffffffffull;   // 31:0 type count
inline constexpr unsigned kTypeShift = 32;              // 34:32 PageType
inline constexpr uint64_t kTypeMask = 7ull << kTypeShift;
inline constexpr uint64_t kValidated = 1ull << 35;      // table contents checked, refs held
inline constexpr uint64_t kPinned = 1ull << 36;         // MMUEXT_PIN_* holds one type ref
inline constexpr uint64_t kBusy = 1ull << 37;           // (de)validation or a last drop in progress
inline constexpr uint64_t kCountLimit = 0xfffffff0ull;  // refuse before the count wraps

constexpr PageType type(uint64_t x) { return PageType((x & kTypeMask) >> kTypeShift); }
constexpr uint64_t count(uint64_t x) { return x & kCountMask; }
constexpr uint64_t with_type(PageType t) { return uint64_t(t) << kTypeShift; }
} // namespace ti

struct FrameInfo {
    std::atomic<uint64_t> type_info{0};
    std::atomic<uint32_t> count{0};            // general references
    std::atomic<DomId> owner{kOwnerFree};
    SpinLock lock;                             // page-table page writers
    std::atomic<uint64_t> tlbflush_stamp{0};   // TlbClock time of the last drop

    PageType type() const { return ti::type(type_info.load(std::memory_order_acquire)); }
    uint64_t type_count() const { return ti::count(type_info.load(std::memory_order_acquire)); }
    bool validated() const { return type_info.load(std::memory_order_acquire) & ti::kValidated; }
    bool pinned() const { return type_info.load(std::memory_order_acquire) & ti::kPinned; }
};

// Machine memory as the core sees it: frames [0, nr_frames) directly addressable
// (the sim's arena; bare metal's direct map).
struct MachineMemory {
    uint8_t* base = nullptr;
    uint64_t nr_frames = 0;

    bool valid(Mfn m) const { return m.v < nr_frames; }
    uint64_t* table(Mfn m) const { return reinterpret_cast<uint64_t*>(base + (m.v << kPageShift)); }
    void* frame(Mfn m) const { return base + (m.v << kPageShift); }
};

} // namespace pvmmu
