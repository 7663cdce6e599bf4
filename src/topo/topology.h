// The machine as a graph: GPUs, NUMA nodes (a socket's cores, memory and PCIe root complex),
// PCIe switches, NICs, NVSwitches and the network, joined by links with a capacity per
// direction. Loaded from and saved to JSON (topologies/*.json), or discovered on this machine.
#pragma once

#include <string>
#include <vector>

#include "common/result.h"

namespace braid::topo {

enum class NodeKind { Gpu, Numa, PcieSwitch, Nic, NvSwitch, Network };
enum class LinkKind { Pcie, NvLink, InterSocket, Network };

struct Node {
  int id = 0;             // index in Topology::nodes
  NodeKind kind = NodeKind::Numa;
  std::string name;       // "gpu0", "numa1", "sw0", "nic3", ...
  int server = 0;         // which machine of a multi-node topology
  int numa = -1;          // Gpu/Nic/PcieSwitch: the NUMA node (node id) whose root complex it hangs off
  double memory_gbps = 0; // Numa: host memory bandwidth; Gpu: device memory bandwidth
  int cores = 0;          // Numa: CPU cores
  std::string pci_bus_id; // Gpu/Nic when known
};

struct Link {
  int a = 0, b = 0;        // node ids
  LinkKind kind = LinkKind::Pcie;
  double gbps_ab = 0;      // GB/s from a to b
  double gbps_ba = 0;      // GB/s from b to a
  double latency_us = 0;   // one-way latency
};

// One direction of a link along a route.
struct Hop {
  int link = 0;      // index in Topology::links
  bool forward = true;  // a -> b
};

struct Topology {
  std::string name;
  std::string description;
  std::vector<Node> nodes;
  std::vector<Link> links;
  // Figures for the engine's cost model that belong to the machine, not one link.
  double host_memcpy_gbps = 0;   // one core's copy bandwidth (0: unknown)
  double pcie_both_ways_gbps = 0;  // per GPU per direction when all GPUs copy both ways (0: unknown)

  std::vector<int> gpus() const;        // node ids of kind Gpu, in order
  std::vector<int> numa_nodes() const;  // node ids of kind Numa, in order
  int gpu_count() const;
  // Whether any link is NVLink (the machine's GPUs share it): braid's path rules ask.
  bool has_nvlink() const;
  // The Numa node id serving GPU node `gpu` (its root complex).
  int numa_of(int node) const;
  // Position of a Numa node id among numa_nodes() (the "numa" index programs use).
  int numa_index(int numa_node_id) const;

  // The route data takes from node `from` to node `to`: the path with the fewest hops, ties
  // broken by the largest bottleneck capacity, never through a GPU or NIC in the middle.
  std::vector<Hop> route(int from, int to) const;
  double hop_gbps(const Hop& h) const;

  // Checks ids, link ends, capacities and that every GPU reaches a NUMA node.
  Result check() const;
};

// The NUMA index (position in numa_nodes()) each of `ranks` ranks stages through: rank r uses
// GPU r % gpu_count() (ranks beyond the GPU count share GPUs, as a simulation of a larger job
// would). A topology without GPUs places every rank on NUMA index 0.
std::vector<int> rank_numa(const Topology& t, int ranks);
// The GPU node id of each rank, as above (-1 when the topology has no GPU).
std::vector<int> rank_gpu(const Topology& t, int ranks);

Result load_topology_json(const std::string& text, Topology* out);
std::string save_topology_json(const Topology& t);
Result load_topology_file(const std::string& path, Topology* out);
// A bundled name ("h200x2", "hylink-3090x4", ...) or a path to a JSON file.
Result load_topology(const std::string& name_or_path, Topology* out);
// Names of the bundled topologies (files in topologies/ and BRAID_TOPO_DIR).
std::vector<std::string> bundled_topologies();

// This machine, from sysfs (and NVML when a driver is present). Without GPUs the result has the
// CPU's NUMA nodes and no GPU; it never fails for lack of a GPU.
Result discover_topology(Topology* out);

}  // namespace braid::topo
