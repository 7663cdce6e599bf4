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
// displacements inside each rank's one send and one receive buffer (null: that rank's are not
// known here; its pairs stay empty).
ExchangeBuffers packed_buffers(const route::ExchangeLayout& layout, const std::vector<const void*>& send,
                               const std::vector<void*>& recv, std::vector<void*> scratch);

// The buffers of a send/recv group from every rank's flows (route::sort_into_flows), their
// pointers as this rank addresses them: [s * ranks + d] takes rank s's sends to d and rank d's
// receives from s.
ExchangeBuffers grouped_buffers(const std::vector<route::RankFlows>& every_rank, std::vector<void*> scratch);

// Three counters per rank that every rank's queues can reach (pointers: on GPUs they sit in each
// rank's record of the control segment), never reset: each exchange raises them past every value
// of the exchanges before it (its `epoch` is larger). A queue runs in order, so one counter per
// queue tells how far it got: every rank has the same plan and knows at which position of the
// writer's queue each copy sits.
struct ExchangeSignals {
  std::vector<std::atomic<uint64_t>*> ready;      // [rank] = epoch once it entered this exchange:
                                                  // its receive buffers and scratch may be written
  std::vector<std::atomic<uint64_t>*> sent;       // [rank] epoch << 32 + slices its send queue copied
  std::vector<std::atomic<uint64_t>*> forwarded;  // [rank] the same for its relay queue
};

// How run_exchange ends: the host waits (at most `timeout_s`) until this rank's part is done, or
// the waits go on the backend's queues and it returns once everything is queued (GPUs: between
// begin_collective and end_collective, so the user's stream joins the queues' end; the backend
// bounds the waits).
enum class Completion { HostWaits, QueuesWait };

// Raises this rank's `ready` on its send queue, enqueues its copies and forwards, then the
// completion: every range it receives has landed and every copy out of its send buffers and
// scratch has finished. A copy into a peer's buffer or scratch first waits for that peer's
// `ready` (it may still be reading them in the previous exchange, or the user its results).
// Sends go on one queue that waits only for `ready` (raised by each rank on entry, behind
// nothing) and forwards on another that waits for sends and `ready`, so no queue can wait on a
// copy queued behind a wait of its own: no deadlock once every rank has entered.
// `epoch` from 1 to 2^32 - 1, larger than the last exchange's; relayed ranges move in slices of
// `slice_bytes`, each forwarded as soon as it is in the relay's scratch.
Result run_exchange(const route::ExchangePlan& plan, int rank, const ExchangeBuffers& buffers,
                    const ExchangeSignals& signals, uint64_t epoch, device::Backend* backend,
                    size_t slice_bytes = size_t{512} << 10, double timeout_s = 30.0,
                    Completion completion = Completion::HostWaits);

}  // namespace braid::engine
