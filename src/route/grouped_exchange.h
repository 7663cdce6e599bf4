// Recognising an exchange behind the NCCL API: the sends and receives one rank made inside one
// outermost ncclGroupStart/End (or alone), sorted into flows by NCCL's matching rule (the k-th send
// from rank a to rank b matches b's k-th receive from a), and the agreement every rank reaches on
// the whole exchange from a small summary each rank publishes. ncclAlltoAll, ncclGather and
// ncclScatter need no agreement: every rank knows every count (alltoall_layout, gather_layout,
// scatter_layout).
//
// A pair's flows are carried as one block, the flows one after another in matching order: the
// router and the plan work on pair totals (route/exchange_plan.h), so a relay needs no flow sizes
// and the summary stays a few words per peer; the ends map block offsets to each flow's own
// buffer (engine::ExchangeBuffers).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/result.h"
#include "route/exchange_plan.h"
#include "topo/topology.h"

namespace braid::route {

// One ncclSend or ncclRecv as the application made it: `bytes` = count x the datatype's size.
// NCCL moves bytes, so a send and its matching receive may name different datatypes.
struct PeerCall {
  enum Kind { Send, Recv } kind = Send;
  int peer = 0;
  void* buffer = nullptr;
  size_t bytes = 0;
};

// One rank's calls of a group as flows: [peer] the buffers it sends that peer and receives from
// it, in call order. Count-0 calls keep their place (they still match, as in NCCL).
struct RankFlows {
  int rank = 0, ranks = 0;
  std::vector<std::vector<FlowBuffer>> sends, recvs;
};

// Sorts `calls` (in the order they were made) into flows; InvalidArgument for a peer outside
// [0, ranks).
Result sort_into_flows(int rank, int ranks, const std::vector<PeerCall>& calls, RankFlows* out);

// What a rank publishes so that every rank knows the exchange: per peer, the bytes it sends and a
// fingerprint of its sends' sizes in order, then the same for what it receives (kSummaryWords per
// peer, n x 32 bytes per rank; every rank all-gathers them).
inline constexpr int kSummaryWords = 4;
std::vector<uint64_t> summarize(const RankFlows& flows);

// From every rank's summary (rank-major, ranks x ranks x kSummaryWords words): the exchange's
// layout in bytes (element_bytes 1), once every rank's sends to every peer match that peer's
// receives flow by flow. Otherwise InvalidArgument naming the first pair that does not: every
// rank reaches the same verdict from the same words, so all refuse the group together.
Result agree_on_exchange(int ranks, const std::vector<uint64_t>& summaries, ExchangeLayout* out);

// ncclAlltoAll(count, type): `count` elements of `element_bytes` for every pair, packed.
ExchangeLayout alltoall_layout(int ranks, size_t count, size_t element_bytes);

// ncclGather(count, type, root): every rank sends `count` elements from the start of its send
// buffer to `root`, which receives rank r's at r x count elements of its receive buffer (its own
// block is a copy inside root). Packed, as alltoall_layout: no other pair moves anything.
ExchangeLayout gather_layout(int ranks, int root, size_t count, size_t element_bytes);

// ncclScatter(count, type, root): `root` sends the block at d x count elements of its send buffer
// to rank d, which receives it at the start of its receive buffer.
ExchangeLayout scatter_layout(int ranks, int root, size_t count, size_t element_bytes);

// Whether `rank` can take part in `layout` (packed: each block at the layout's offsets in the
// rank's one send and one receive buffer) with these buffers: every buffer it uses is not null,
// and no byte it receives lands on a byte it sends, peers writing as it reads, except its own
// block received at the very place it sends it (a copy of nothing: ncclGather in place on root,
// sendbuff = recvbuff + root x count, and ncclScatter in place, recvbuff = sendbuff + root x
// count). A buffer the layout gives the rank nothing in is never looked at (null or anything: a
// non-root's receive buffer of ncclGather). An ncclAlltoAll in place is refused.
bool packed_buffers_usable(const ExchangeLayout& layout, int rank, const void* send, const void* recv);

// The largest pair block of the exchange in bytes (the self pair aside): the size threshold's
// measure, as NIMBLE's per-flow threshold.
size_t largest_flow_bytes(const ExchangeLayout& layout);

// How many transfers of `plan` go through a relay: none means braid's path adds nothing to
// direct copies, and the exchange is better left to NCCL.
size_t relayed_ranges(const ExchangePlan& plan);

// The topology the router uses for `ranks` ranks, rank r on the r-th GPU: `t` without its GPUs
// from the ranks-th on (and their links). InvalidArgument when `t` has fewer GPUs than ranks.
Result topology_for_ranks(const topo::Topology& t, int ranks, topo::Topology* out);

}  // namespace braid::route
