// A flow-level model of FuseLink's NIC choice between two servers (braid-sim fuselink, docs/NET.md):
// predictions, not measurements. Requests move bytes from GPUs of server 0 to the same-numbered
// GPUs of server 1; at every arrival or completion the rates are recomputed, max-min fair over
// the directed links of the topology (each NIC pair a request uses is one subflow).
//   - NicPolicy::Direct: one NIC per GPU (NCCL's binding): GPU g's direct NIC to the receiving
//     GPU's direct NIC.
//   - NicPolicy::FuseLink: the direct NIC, plus every NIC whose owner GPU has no traffic of its
//     own in that direction (idle on the sender for sending, on the receiver for receiving),
//     reached over NVLink through the owner GPU's memory (path D1) on either side; sender and
//     receiver NICs paired in turn (i-th to i mod count), as braid's transport pairs them. Owners
//     take their NIC back the moment they have traffic (the monitor's reaction time is not modelled).
// Relayed bytes cross NVLink at `relay_efficiency` of its capacity (calibration: FuseLink's one GPU
// reaches 212 GB/s over 6 NICs of 50 GB/s where direct NIC + NVLink bound it at 250).
#pragma once

#include <vector>

#include "common/result.h"
#include "topo/topology.h"

namespace braid::net {

enum class NicPolicy { Direct, FuseLink };

struct FuseLinkModelOptions {
  double relay_efficiency = 0.81;  // (212 - 50) / 200: the paper's one-GPU point, see above
  int nics_per_server = 0;          // NICs usable on each server, the first ones (0: all)
};

// One request: `bytes_per_gpu` from each of `gpus` (server-0 GPU indices) to the GPU of the same
// index on server 1, arriving at `arrival_s`. Requests of one `queue` run one at a time, in order
// (a serving instance moving one KV cache after another).
struct ModelRequest {
  int queue = 0;
  std::vector<int> gpus;
  double bytes_per_gpu = 0;
  double arrival_s = 0;
};

struct ModelResult {
  std::vector<double> finish_s;  // per request
  double makespan_s = 0;         // the last finish
  int max_nics_used = 0;         // the most subflows one GPU had at once
};

// Simulates `requests` on a topology with two servers (server 0 sends, server 1 receives).
Result simulate_fuselink(const topo::Topology& t, const std::vector<ModelRequest>& requests, NicPolicy policy,
                         const FuseLinkModelOptions& options, ModelResult* out);

}  // namespace braid::net
