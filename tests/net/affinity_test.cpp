// NIC-to-GPU affinity from the bundled topology files.
#include <gtest/gtest.h>

#include "net/nic_affinity.h"

namespace braid::net {
namespace {

TEST(NetAffinity, FuseLinkTestbedPairsEachNicWithItsSwitchGpu) {
  topo::Topology t;
  ASSERT_EQ(topo::load_topology("fuselink-2x8", &t), Result::Success);
  auto a = nic_affinity(t, 0);
  ASSERT_EQ(a.size(), 8u);
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(a[size_t(i)].nic_name, "nic" + std::to_string(i));
    EXPECT_EQ(a[size_t(i)].gpu, i) << "nic" << i;  // each NIC shares a PCIe switch with one GPU
  }
  // Server 1 has its own eight.
  EXPECT_EQ(nic_affinity(t, 1).size(), 8u);
}

TEST(NetAffinity, PciAddressFallsBackToTheGpus) {
  topo::Topology t;
  ASSERT_EQ(topo::load_topology("fuselink-2x8", &t), Result::Success);
  for (auto& n : t.nodes)
    if (n.name == "gpu2" && n.server == 0) n.pci_bus_id = "0000:3b:00.0";
  auto a = nic_affinity(t, 0);
  EXPECT_EQ(a[2].pci_bus_id, "0000:3b:00.0");  // nic2 has none of its own: its GPU's
  EXPECT_EQ(a[1].pci_bus_id, "");
}

TEST(NetAffinity, TopologyWithoutNicsHasNone) {
  topo::Topology t;
  ASSERT_EQ(topo::load_topology("h200x2", &t), Result::Success);
  EXPECT_TRUE(nic_affinity(t, 0).empty());
}

}  // namespace
}  // namespace braid::net
