// braid-sim versus-nccl: braid against NCCL on an H200 machine, predicted by the model calibrated
// to the stored measurements (plan/versus_nccl.h), each row beside the measured ratio where one
// was stored.
#pragma once

#include <string>
#include <vector>

namespace braid::sim {

struct VersusNcclArgs {
  std::string topo = "h200x8";
  int ranks = 0;  // 0: the topology's GPUs
  std::string min_bytes = "16M", max_bytes = "1G";
  double factor = 4;
  std::vector<std::string> collectives = {"all_gather", "all_reduce", "reduce_scatter"};
  std::string calibration;  // empty: the bundled measurements
  std::string json_path;
};

// Prints the table; returns the process exit code.
int run_versus_nccl(const VersusNcclArgs& args);

}  // namespace braid::sim
