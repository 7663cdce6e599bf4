// Discovery internals, exposed so tests can run them on a fake sysfs tree.
#pragma once

#include <string>
#include <vector>

#include "topo/topology.h"

namespace braid::topo {

struct DiscoverOptions {
  std::string sysfs_root = "/sys";  // a test points this at a tree it built
  bool use_nvml = true;             // off in tests: the fake GPUs are unknown to the driver
};

// This machine (or the tree under sysfs_root) as a topology; see discover_topology().
Result discover_topology_at(const DiscoverOptions& options, Topology* out);

// PCIe bandwidth per direction in GB/s from sysfs's current_link_speed text ("32.0 GT/s PCIe")
// and current_link_width ("16"): GT/s * lanes * 128/130 / 8. 0 when either is unreadable.
double pcie_gbps_from_sysfs(const std::string& speed_text, const std::string& width_text);

// The number of CPUs in a list like "0-7,16-23" (0 for an empty or malformed list).
int count_cpu_list(const std::string& text);

// Active NVLinks seen through NVML, for GPUs given by PCI bus id (sysfs spelling).
struct NvLinkCounts {
  std::vector<std::vector<int>> between;  // [i][j]: links of GPU i whose far end is GPU j
  std::vector<int> to_other;              // links of GPU i ending elsewhere (an NVSwitch)
};
// False (with the reason in *why) when NVML is missing or fails; *out is then empty.
bool query_nvlinks(const std::vector<std::string>& gpu_bus_ids, NvLinkCounts* out, std::string* why);

// Normalises "00000000:1A:00.0" and "0000:1a:00.0" to "0000:1a:00.0"; empty when unparsable.
std::string normalize_pci_bus_id(const std::string& text);

}  // namespace braid::topo
