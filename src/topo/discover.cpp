// Placeholder until sysfs discovery lands: a CPU-only machine with one NUMA node.
#include <thread>

#include "topo/topology.h"

namespace braid::topo {

Result discover_topology(Topology* out) {
  if (out == nullptr) return fail(Result::InvalidArgument, "discover_topology: out is null");
  Topology t;
  t.name = "discovered";
  Node numa;
  numa.name = "numa0";
  numa.cores = static_cast<int>(std::thread::hardware_concurrency());
  t.nodes.push_back(numa);
  *out = t;
  return Result::Success;
}

}  // namespace braid::topo
