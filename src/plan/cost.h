// A cost model for programs on a topology: bytes per resource (each link direction, each NUMA
// node's memory, each GPU's memory, each rank's instruction issue) plus a pipeline term for the
// longest dependency chain. See docs/PLANNING.md.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/types.h"
#include "dsl/program.h"
#include "plan/generate.h"
#include "topo/topology.h"

namespace braid::plan {

struct CostOptions {
  size_t slice_bytes = size_t{1} << 20;  // the engine's pipeline slice
  double instruction_latency_us = 10;    // per instruction on the critical path
  double issue_us = 2;                   // per instruction, serial on the executing rank
  double default_host_memory_gbps = 100; // when a NUMA node has no memory_gbps
  double default_gpu_memory_gbps = 1000; // when a GPU has no memory_gbps
  double default_link_gbps = 10;         // when a route has no links (no GPU in the topology)
};

struct ResourceUse {
  std::string name;  // "pcie gpu0->numa0", "mem numa1", "gpu-mem gpu2", "issue rank3"
  double bytes = 0;
  double gbps = 0;   // capacity used for the estimate
  double seconds = 0;
};

struct ProgramCost {
  double seconds = 0;           // predicted time
  double transfer_seconds = 0;  // the busiest resource's time
  double pipeline_seconds = 0;  // critical path x (latency + slice time)
  int critical_path = 0;        // longest dependency chain, in instructions
  std::string bottleneck;       // name of the busiest resource
  // Indexed by GPU position in topology.gpus() (one entry when the topology has none).
  std::vector<int> uploads_per_gpu;          // D2H, in chunks
  std::vector<int> downloads_per_gpu;        // H2D and device REDUCE (staged H2D), in chunks
  std::vector<double> upload_bytes_per_gpu;
  std::vector<double> download_bytes_per_gpu;
  int uploads = 0;
  int downloads = 0;
  int inter_socket_crossings = 0;  // H2H instructions whose route uses an inter-socket link
  int network_crossings = 0;       // H2H instructions whose route uses a network link
  double host_reduce_bytes = 0;    // bytes the CPUs reduce (per source chunk)
  std::vector<ResourceUse> resources;  // only those used
};

// `count` is NCCL's count (elements per block, see program.h).
Result estimate(const dsl::Program& program, const topo::Topology& topology, size_t count,
                DataType dtype, const CostOptions& options, ProgramCost* out);

// Length of the longest dependency chain in instructions; fails on a cycle or a dependency on a
// version no writer reaches.
Result critical_path(const dsl::Program& program, int* length);

struct ChooseOptions {
  std::optional<ReducePlacement> placement;  // fixed, or both tried for reducing collectives
  int chunks = 0;                            // fixed, or 0: candidates 1, 2, 4, ranks, 2*ranks (<= 64)
  // Fixed, or nullopt: Hierarchical and, where it exists, Ring tried (never Auto).
  std::optional<GenerateOptions::Algorithm> algorithm = GenerateOptions::Algorithm::Hierarchical;
  bool deterministic = false;
  int root = 0;
  CostOptions cost;
};

struct PlanChoice {
  ReducePlacement placement = ReducePlacement::Host;
  GenerateOptions::Algorithm algorithm = GenerateOptions::Algorithm::Hierarchical;
  int chunks = 1;
  double seconds = 0;
};

// The candidate with the lowest predicted time for a message of `bytes` (nccl-tests' size).
Result choose_plan(Collective collective, int ranks, const topo::Topology& topology, size_t bytes,
                   DataType dtype, const ChooseOptions& options, PlanChoice* out);
Result choose_plan(Collective collective, int ranks, const topo::Topology& topology, size_t bytes,
                   DataType dtype, PlanChoice* out);

// The candidate chunk counts choose_plan tries.
std::vector<int> chunk_candidates(Collective collective, int ranks);

}  // namespace braid::plan
