// Runs one rank's part of a routed all-to-allv (route/exchange_plan.h) on a device backend:
// the rank's own ranges go by peer copies straight into the receivers' buffers, or into a
// relay's scratch; as a relay, it waits for each range it carries and copies it on into the
// receiver's buffer at its final place. On the CPU backend device memory is host memory and
// peer copies are memcpy (ranks as threads); on GPUs the same calls are peer copies over NVLink.
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "common/result.h"
#include "device/backend.h"
#include "route/exchange_plan.h"
#include "route/grouped_exchange.h"

namespace braid::engine {

// Every rank's buffers as this rank's backend addresses them (peer access / IPC handles). Each
// flow has its own buffer at each end: [s * ranks + d] lists the flows s sends d in NCCL's
// matching order (the k-th send matches the k-th receive), and the pair's block that the plan
// cuts is those flows one after another, at the sender (send) and at the receiver (recv). A rank
// needs the pairs it sends, receives or relays into; the others may stay empty.
struct ExchangeBuffers {
  std::vector<std::vector<route::FlowBuffer>> send, recv;
  std::vector<void*> scratch;  // [rank] plan.scratch_bytes[rank] bytes
};

// The buffers of a packed all-to-allv (ncclAlltoAll): one flow per pair, at the layout's
// displacements inside each rank's one send and one receive buffer.
ExchangeBuffers packed_buffers(const route::ExchangeLayout& layout, const std::vector<const void*>& send,
                               const std::vector<void*>& recv, std::vector<void*> scratch);

// The buffers of a send/recv group from every rank's flows (route::sort_into_flows), their
// pointers as this rank addresses them: [s * ranks + d] takes rank s's sends to d and rank d's
// receives from s.
ExchangeBuffers grouped_buffers(const std::vector<route::RankFlows>& every_rank, std::vector<void*> scratch);

// Counters every rank's queues can reach, never reset: each exchange raises them past every
// value of the exchanges before it (its `epoch` is larger).
struct ExchangeSignals {
  std::atomic<uint64_t>* ready = nullptr;    // [rank] = epoch once it entered this exchange:
                                             // its receive buffer and scratch may be written
  std::atomic<uint64_t>* relayed = nullptr;  // [transfer] epoch << 32 + slices in the relay's scratch
  std::atomic<uint64_t>* landed = nullptr;   // [transfer] epoch << 32 + slices in the receiver's buffer
};

// Raises this rank's `ready`, enqueues its copies and forwards, then waits (at most
// `timeout_s`) until every range it receives has landed and every copy out of its send buffer
// and scratch has finished. A copy into a peer's buffer or scratch first waits for that peer's
// `ready` (it may still be reading them in the previous exchange, or the user its results).
// Sends go on one queue that waits only for `ready` (raised by each rank on entry, behind
// nothing) and forwards on another that waits for sends and `ready`, so no queue can wait on a
// copy queued behind a wait of its own: no deadlock once every rank has entered.
// `epoch` from 1 to 2^32 - 1, larger than the last exchange's; relayed ranges move in slices of
// `slice_bytes`, each forwarded as soon as it is in the relay's scratch.
Result run_exchange(const route::ExchangePlan& plan, int rank, const ExchangeBuffers& buffers,
                    const ExchangeSignals& signals, uint64_t epoch, device::Backend* backend,
                    size_t slice_bytes = size_t{512} << 10, double timeout_s = 30.0);

}  // namespace braid::engine
