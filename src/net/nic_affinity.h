// Which GPU each NIC serves, from a topology file (topologies/*.json, BRAID_TOPO_FILE): the GPU
// with the shortest PCIe route to the NIC (fewest hops, then the lower GPU number). The plugin's
// NIC i is the topology's i-th NIC of server 0; for a NIC the topology gives no PCI address of
// its own, the plugin reports its GPU's, so NCCL pairs them as the file says (emulated NICs).
#pragma once

#include <string>
#include <vector>

#include "topo/topology.h"

namespace braid::net {

struct NicAffinity {
  std::string nic_name;  // the topology's name ("nic3")
  int gpu = -1;          // index among the server's GPUs (-1: none reachable)
  std::string pci_bus_id;  // the NIC's, else its GPU's, else empty
};

// One entry per NIC of `server`, in the topology's node order.
std::vector<NicAffinity> nic_affinity(const topo::Topology& t, int server = 0);

}  // namespace braid::net
