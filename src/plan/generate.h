// Program generators: a PCIe CCL program (dsl::Program) for every collective, any rank count and
// any topology. See docs/PLANNING.md for the algorithms.
#pragma once

#include <cstddef>

#include "common/result.h"
#include "common/types.h"
#include "dsl/program.h"
#include "topo/topology.h"

namespace braid::plan {

// Where the reductions of AllReduce / ReduceScatter / Reduce run.
enum class ReducePlacement {
  Host,    // HyLink: the CPU accumulates in host slots, GPUs only upload and download
  Device,  // every GPU reduces what it needs itself, in a fixed rank order (bitwise equal results)
  Auto,    // the cost model chooses (generate() resolves it with choose_plan())
};

struct GenerateOptions {
  enum class Algorithm {
    Hierarchical,  // HyLink Fig. 1(c): upload once, cross each socket link once, CPU routes
    Ring,          // NCCL-style host-staged ring (AllGather and AllReduce only; AllReduce's reduces
                   // on the GPUs, so the host does no reduction)
    Auto,          // the cost model chooses between the two where the ring exists
  };
  ReducePlacement placement = ReducePlacement::Host;
  int chunks = 0;  // chunks per block; 0: the cost model chooses for `bytes`
  Algorithm algorithm = Algorithm::Hierarchical;
  // Host reductions as a strict chain in a fixed order instead of one unordered group.
  bool deterministic = false;
  int root = 0;  // Broadcast and Reduce
  // Hints for the choices the cost model makes (chunks == 0 or placement == Auto): the message
  // size as nccl-tests prints it (the whole output for AllGather/ReduceScatter/AllToAll).
  size_t bytes = size_t{64} << 20;
  DataType dtype = DataType::Float32;
};

std::string_view placement_name(ReducePlacement p);  // "host", "device", "auto"
std::string_view algorithm_name(GenerateOptions::Algorithm a);  // "hierarchical", "ring", "auto"
// Whether `collective` has a program of `algorithm` (the ring: AllGather and AllReduce).
bool has_algorithm(Collective collective, GenerateOptions::Algorithm algorithm);

// Fills *out with a program for `collective` over `ranks` ranks placed on `topology` (rank r stages
// through NUMA node topo::rank_numa(topology, ranks)[r]). The program is valid both out-of-place
// and in-place (dsl::validate with either option).
Result generate(Collective collective, int ranks, const topo::Topology& topology,
                const GenerateOptions& options, dsl::Program* out);

// Settles what `options` leaves to the cost model (chunks 0, placement or algorithm Auto) with
// choose_plan for a message of options->bytes, as generate() does: callers that report the choice.
Result resolve_choices(Collective collective, int ranks, const topo::Topology& topology, GenerateOptions* options);

// Applies BRAID_CHUNKS, BRAID_REDUCE_PLACEMENT (host, device, auto), BRAID_ALGORITHM
// (hierarchical, ring, auto) and BRAID_DETERMINISTIC to *options (other fields untouched);
// InvalidArgument for an unknown placement name.
Result apply_settings(GenerateOptions* options);

// nccl-tests' "count" for a message of `bytes` bytes (whole output for AllGather, ReduceScatter and
// AllToAll, so divided by ranks there); at least 1.
size_t count_for_bytes(Collective collective, int ranks, size_t bytes, DataType dtype);

}  // namespace braid::plan
