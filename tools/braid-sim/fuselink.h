// braid-sim fuselink: FuseLink's NIC choice (direct NIC, idle indirect NICs through NVLink relays,
// striping) against one NIC per GPU, between the two servers of a topology (fuselink-2x8: FuseLink's
// testbed), by the flow-level model of net/fuselink_model.h. Predictions, not measurements.
#pragma once

#include <string>
#include <vector>

namespace braid::sim {

struct FuseLinkArgs {
  std::string topo = "fuselink-2x8";
  // balanced, hot:K (K GPUs send, the rest idle), zipf:S (GPU i sends in proportion to 1/(i+1)^S),
  // random (uniform 0-2x the mean), tp:T:A (serving instances of T GPUs, A of them moving a KV cache).
  std::vector<std::string> scenarios = {"balanced", "hot:1", "hot:2", "hot:4", "zipf:1", "zipf:2", "random",
                                        "tp:1:1", "tp:2:1", "tp:4:1", "tp:2:2"};
  std::string bytes = "256M";     // per sending GPU (the mean, for zipf and random)
  double relay_efficiency = 0.81; // (212 - 50) / 200, FuseLink's one-GPU figure
  bool single = false;            // instead: one GPU's bandwidth over 1..8 NICs (the paper's microbenchmark)
  bool serving = false;           // instead: KV-cache moves arriving at random (the paper's serving runs)
  double load = 0.3;              // serving: each instance's NIC busy this share of the time one NIC per GPU
  std::string kv_bytes = "1G";    // serving: mean KV cache per request (split over the instance's GPUs)
  int requests = 400;             // serving: requests per instance
  unsigned seed = 1;
};

// Prints the table; returns the process exit code.
int run_fuselink(const FuseLinkArgs& args);

}  // namespace braid::sim
