// The FIFO event ABI's state of one domain (<xen/event_channel.h> "FIFO
// ABI"; docs/architecture.md §9 "FIFO"): each vCPU's control block (READY
// and the HEAD of its 16 priority queues, in a guest frame) and the queues'
// tails, which only the hypervisor keeps; the event array (one 32-bit word
// per port: PENDING, MASKED, LINKED, BUSY and the 17-bit LINK to the next
// event of its queue, in guest frames added one by one). Every word and the
// control block are guest memory: the guest changes them concurrently, so
// the hypervisor touches them only with atomic operations, and never follows
// a LINK (a guest can make the links anything).
//
// Everything here changes under the domain's event lock (DomainEvents::lock)
// but `on`, `nr_pages` and `page`, which a lock-free reader (SCHEDOP_poll's
// pending check) may load: pages are published before the count that makes
// them visible.
#pragma once

#include <atomic>

#include <pvmmu/abi.h>

#include "core/types.h"

namespace pvmmu {

inline constexpr unsigned kFifoQueues = EVTCHN_FIFO_MAX_QUEUES;                      // 16 priorities
inline constexpr unsigned kFifoWordsPerPage = unsigned(kPageSize / sizeof(event_word_t));   // 1024
inline constexpr unsigned kFifoMaxPages = EVTCHN_FIFO_NR_CHANNELS / kFifoWordsPerPage;   // 128, as Xen

// The bits of an event word (<xen/event_channel.h>).
inline constexpr event_word_t kFifoPending = 1u << EVTCHN_FIFO_PENDING;
inline constexpr event_word_t kFifoMasked = 1u << EVTCHN_FIFO_MASKED;
inline constexpr event_word_t kFifoLinked = 1u << EVTCHN_FIFO_LINKED;
inline constexpr event_word_t kFifoBusy = 1u << EVTCHN_FIFO_BUSY;
inline constexpr event_word_t kFifoLinkMask = EVTCHN_FIFO_LINK_MASK;

struct FifoVcpu {
    evtchn_fifo_control_block_t* block = nullptr;   // null: no EVTCHNOP_init_control for it yet
    Mfn block_mfn{0};                               // held writable while `block` is set
    uint32_t tail[kFifoQueues] = {};                // the last port linked on each queue (0: none)
};

// The queue a port was last linked on: kept across close and re-bind, as Xen
// keeps it, so that linking it on another queue ends the old queue's tail.
struct FifoQueueId {
    uint16_t vcpu = 0;
    uint8_t priority = EVTCHN_FIFO_PRIORITY_DEFAULT;
};

struct FifoEvents {
    std::atomic<bool> on{false};            // the domain switched to FIFO (its first init_control)
    std::atomic<unsigned> nr_pages{0};      // event array pages: ports below nr_pages * 1024 have a word
    std::atomic<event_word_t*> page[kFifoMaxPages] = {};
    Mfn page_mfn[kFifoMaxPages] = {};       // each held writable while below nr_pages
    FifoVcpu vcpu[kMaxCpus];
    FifoQueueId last[EVTCHN_2L_NR_CHANNELS];
};

} // namespace pvmmu
