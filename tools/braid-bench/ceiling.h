// The PCIe ceiling of this machine, measured in the same run as the collectives: every GPU
// copies device-to-host and host-to-device at once (pinned host buffers, one stream per
// direction per GPU), which is the most any PCIe-staged collective can move per GPU.
#pragma once

#include <cstddef>
#include <vector>

namespace braid::bench {

struct CeilingResult {
  std::vector<double> d2h_gbps;  // per GPU
  std::vector<double> h2d_gbps;  // per GPU
  double min_gbps = 0;           // the slowest GPU and direction
};

CeilingResult measure_pcie_ceiling(const std::vector<int>& devices, size_t bytes, int iters);

}  // namespace braid::bench
