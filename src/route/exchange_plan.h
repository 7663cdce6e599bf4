// A routed all-to-allv as byte-range transfers: each flow's block is cut into consecutive
// ranges, one per path the routing gives it (route/router.h); a direct range goes straight from
// the sender's block into the receiver's, a relayed one through a scratch area of the relay GPU
// and on into the receiver's block at the same offset. Every range lands in place at the
// receiver, so nothing is copied twice there; the relay holds its ranges only in its scratch.
//
// The plan is data, for any executor (engine/routed_exchange.h runs it on a device backend);
// check_exchange_plan() proves a plan covers every receive byte exactly once with the right
// bytes, the way the DSL validator proves a program.
#pragma once

#include <cstddef>
#include <vector>

#include "common/result.h"
#include "route/router.h"

namespace braid::route {

// Elements each rank sends each rank: row-major ranks x ranks. A pair's block is what s sends d,
// its flows one after another (the application's buffers, engine::ExchangeBuffers); the plan cuts
// byte ranges of blocks. The offsets below place the blocks of a packed all-to-allv (send blocks
// of rank s in destination order, receive blocks of rank d in source order, as ncclAlltoAll).
struct ExchangeLayout {
  int ranks = 0;
  size_t element_bytes = 1;  // ranges are whole elements (1 for send/recv groups: any mix of types)
  std::vector<size_t> counts;  // [s * ranks + d] elements s sends d
  size_t count(int s, int d) const { return counts[size_t(s) * size_t(ranks) + size_t(d)]; }
  size_t block_bytes(int s, int d) const { return count(s, d) * element_bytes; }
  size_t send_offset(int s, int d) const;  // bytes
  size_t recv_offset(int s, int d) const;  // bytes
  size_t send_bytes(int s) const;
  size_t recv_bytes(int d) const;
};

// Where one flow's bytes are at one end (the send buffer at the sender, the receive buffer at the
// receiver), as the rank using it addresses them.
struct FlowBuffer {
  void* data = nullptr;
  size_t bytes = 0;
};

// One range of one pair's block: `bytes` from offset `begin`. via < 0: straight
// from the sender to the receiver; else through relay rank `via`'s scratch at `scratch_offset`.
struct Transfer {
  int src = 0, dst = 0, via = -1;
  size_t begin = 0;           // offset inside the pair's block (bytes)
  size_t bytes = 0;
  size_t scratch_offset = 0;  // relays only
  bool operator==(const Transfer&) const = default;
};

struct ExchangePlan {
  ExchangeLayout layout;
  std::vector<Transfer> transfers;    // flows in (src, dst) order, ranges in block order
  std::vector<size_t> scratch_bytes;  // [rank] scratch its relaying needs
};

struct ExchangePlanOptions {
  // Ranges smaller than this go back to the flow's first path (a relay for a few bytes costs
  // more than it moves). NIC and default paths are carried as direct ranges here.
  size_t min_range_bytes = 4096;
};

// The plan for `layout` under `routing` (router.solve() of the same traffic in bytes).
Result build_exchange_plan(const Router& router, const Routing& routing, const ExchangeLayout& layout,
                           const ExchangePlanOptions& options, ExchangePlan* out);

// Routes `layout`'s traffic (each pair's block bytes) with `router` into `routing` (a routing
// already there is the warm start and the hysteresis reference) and cuts the plan. Every rank
// that makes the same calls in the same order gets the same plan: the drop-in relies on it.
Result route_exchange(Router& router, const ExchangeLayout& layout, const ExchangePlanOptions& options,
                      Routing* routing, ExchangePlan* out);

// Proves `plan`: ranges inside their blocks and element-aligned, every receive byte written
// by exactly one final hop and with the byte of the matching send offset, relay ranges in
// disjoint scratch inside scratch_bytes, no relay through the sender or the receiver.
Result check_exchange_plan(const ExchangePlan& plan);

}  // namespace braid::route
