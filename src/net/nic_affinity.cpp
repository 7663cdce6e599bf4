#include "net/nic_affinity.h"

namespace braid::net {

std::vector<NicAffinity> nic_affinity(const topo::Topology& t, int server) {
  std::vector<int> gpus;
  for (int id : t.gpus())
    if (t.nodes[size_t(id)].server == server) gpus.push_back(id);
  std::vector<NicAffinity> out;
  for (const topo::Node& n : t.nodes) {
    if (n.kind != topo::NodeKind::Nic || n.server != server) continue;
    NicAffinity a;
    a.nic_name = n.name;
    size_t best_hops = SIZE_MAX;
    for (size_t g = 0; g < gpus.size(); ++g) {
      size_t hops = t.route(n.id, gpus[g]).size();
      if (hops > 0 && hops < best_hops) {
        best_hops = hops;
        a.gpu = int(g);
      }
    }
    a.pci_bus_id = !n.pci_bus_id.empty() ? n.pci_bus_id
                   : a.gpu >= 0         ? t.nodes[size_t(gpus[size_t(a.gpu)])].pci_bus_id
                                        : "";
    out.push_back(a);
  }
  return out;
}

}  // namespace braid::net
