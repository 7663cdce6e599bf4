// braid-sim alltoallv: predicted all-to-all(v) time on a topology, NCCL-like direct routing
// against NIMBLE's routing (route/router.h), by the flow-level model of route/exchange_model.h.
#pragma once

#include <string>
#include <vector>

namespace braid::sim {

struct AlltoallvArgs {
  std::string topo = "nimble-h100-2x4";
  // uniform, zipf:S, hot-expert, permutation, hotspot:R (NIMBLE's hotspot ratio), random.
  std::vector<std::string> matrices = {"uniform", "zipf:0.6", "zipf:1.2", "zipf:2.0", "hot-expert", "permutation",
                                       "hotspot:0.3", "hotspot:0.5", "hotspot:0.7", "hotspot:0.9"};
  std::string bytes = "256M";       // mean bytes each rank sends
  double relay_efficiency = 0.78;   // NIMBLE Fig. 6a: 213 GB/s for direct + one relay of 120 GB/s links
  std::string threshold = "1M";     // flows below go direct (NIMBLE disables multipath under 1 MB)
  bool pair = false;                // instead: one pair's bandwidth with 0, 1, 2, ... relays
  unsigned seed = 1;
};

// Prints the table; returns the process exit code.
int run_alltoallv(const AlltoallvArgs& args);

}  // namespace braid::sim
