// A flow-level model of one all-to-all(v) exchange, for the simulator (braid-sim alltoallv):
// every flow's bytes start at once on its paths and the exchange ends when the busiest directed
// link has carried what crosses it (a fluid model: with every path sending at the rate that ends
// with that link, no schedule can do better), plus the latency of the longest path in use.
// A prediction, never a measurement.
#pragma once

#include <string>

#include "common/result.h"
#include "route/router.h"
#include "route/traffic.h"
#include "topo/topology.h"

namespace braid::route {

struct ExchangePrediction {
  double seconds = 0;        // predicted time of the exchange
  double busiest_s = 0;      // busy time of the busiest directed link
  std::string busiest;       // that link, as "gpu0->gpu1"
  double latency_s = 0;      // latency of the longest path in use
};

// Direct only, the way NCCL routes an all-to-all(v): each pair on the topology's default route
// (Topology::route: the direct NVLink link inside a server, the source's NIC to the
// destination's NIC between servers, at full link capacity).
Result predict_direct(const topo::Topology& t, const Traffic& traffic, ExchangePrediction* out);

// Routed: `routing` (from `router`) over the router's candidate paths, each hop at the capacity
// the path sees (relay hops at PathOptions::relay_efficiency of the link).
Result predict_routed(const topo::Topology& t, const Router& router, const Traffic& traffic,
                      const Routing& routing, ExchangePrediction* out);

}  // namespace braid::route
