// Discovery on this machine and on a fake sysfs tree built in a temporary folder.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>

#include "topo/discover.h"
#include "topo/topology.h"

namespace braid::topo {
namespace {

namespace fs = std::filesystem;

void write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text << "\n";
}

// NVIDIA display/3D controllers under /sys, counted independently of the discovery code.
int nvidia_gpus_in_sysfs() {
  int count = 0;
  std::error_code ec;
  for (fs::directory_iterator it("/sys/bus/pci/devices", ec), end; !ec && it != end; it.increment(ec)) {
    std::ifstream vendor(it->path() / "vendor"), cls(it->path() / "class");
    std::string v, c;
    vendor >> v;
    cls >> c;
    if (v == "0x10de" && (c.rfind("0x0300", 0) == 0 || c.rfind("0x0302", 0) == 0)) ++count;
  }
  return count;
}

TEST(Discover, ThisMachine) {
  Topology t;
  ASSERT_EQ(discover_topology(&t), Result::Success) << last_error();
  EXPECT_EQ(t.check(), Result::Success);
  EXPECT_GE(t.numa_nodes().size(), 1u);
  EXPECT_EQ(t.gpu_count(), nvidia_gpus_in_sysfs());  // 0 on the build machine
  int cores = 0;
  for (int n : t.numa_nodes()) cores += t.nodes[n].cores;
  EXPECT_GE(cores, 1);
  EXPECT_EQ(t.host_memcpy_gbps, 0);
  EXPECT_EQ(t.pcie_both_ways_gbps, 0);
  // Round trips like any file.
  Topology again;
  ASSERT_EQ(load_topology_json(save_topology_json(t), &again), Result::Success) << last_error();
  EXPECT_EQ(again.nodes.size(), t.nodes.size());
  EXPECT_EQ(rank_numa(t, 3).size(), 3u);
  if (t.gpu_count() > 0) std::cout << save_topology_json(t);  // to compare with the bundled file
}

struct FakeSysfs {
  fs::path root = fs::temp_directory_path() / ("braid_fake_sysfs_" + std::to_string(::getpid()));
  FakeSysfs() { fs::remove_all(root); }
  ~FakeSysfs() { fs::remove_all(root); }

  void device(const std::string& bus_id, const std::string& vendor, const std::string& cls, int numa,
              const std::string& speed, const std::string& width) {
    fs::path d = root / "bus/pci/devices" / bus_id;
    write(d / "vendor", vendor);
    write(d / "class", cls);
    write(d / "numa_node", std::to_string(numa));
    if (!speed.empty()) write(d / "current_link_speed", speed);
    if (!width.empty()) write(d / "current_link_width", width);
  }
};

TEST(Discover, FakeTreeTwoSocketsTwoGpusOneNic) {
  FakeSysfs sys;
  write(sys.root / "devices/system/node/node0/cpulist", "0-7,16-23");
  write(sys.root / "devices/system/node/node1/cpulist", "8-15,24-31");
  write(sys.root / "devices/system/node/possible", "0-1");  // a file, not a node folder
  // Listed out of bus order on purpose; a non-NVIDIA VGA device and an NVIDIA audio function
  // must be ignored.
  sys.device("0000:ca:00.0", "0x10de", "0x030200", 1, "16.0 GT/s PCIe", "8");
  sys.device("0000:17:00.0", "0x10de", "0x030000", 0, "32.0 GT/s PCIe", "16");
  sys.device("0000:17:00.1", "0x10de", "0x040300", 0, "32.0 GT/s PCIe", "16");
  sys.device("0000:03:00.0", "0x1a03", "0x030000", -1, "5.0 GT/s", "1");
  sys.device("0000:5d:00.0", "0x15b3", "0x020700", -1, "Unknown", "");

  Topology t;
  ASSERT_EQ(discover_topology_at({sys.root.string(), false}, &t), Result::Success) << last_error();
  ASSERT_EQ(t.numa_nodes().size(), 2u);
  EXPECT_EQ(t.nodes[t.numa_nodes()[0]].name, "numa0");
  EXPECT_EQ(t.nodes[t.numa_nodes()[0]].cores, 16);
  EXPECT_EQ(t.nodes[t.numa_nodes()[1]].cores, 16);
  ASSERT_EQ(t.gpu_count(), 2);
  const Node& gpu0 = t.nodes[t.gpus()[0]];
  const Node& gpu1 = t.nodes[t.gpus()[1]];
  EXPECT_EQ(gpu0.pci_bus_id, "0000:17:00.0");
  EXPECT_EQ(gpu1.pci_bus_id, "0000:ca:00.0");
  EXPECT_EQ(t.numa_index(t.numa_of(gpu0.id)), 0);
  EXPECT_EQ(t.numa_index(t.numa_of(gpu1.id)), 1);
  EXPECT_EQ(rank_numa(t, 2), (std::vector<int>{0, 1}));

  std::vector<Hop> up0 = t.route(gpu0.id, t.numa_of(gpu0.id));
  ASSERT_EQ(up0.size(), 1u);
  EXPECT_EQ(t.links[up0[0].link].kind, LinkKind::Pcie);
  EXPECT_NEAR(t.hop_gbps(up0[0]), 32.0 * 16 * 128 / 130 / 8, 1e-9);  // Gen5 x16: 63.0 GB/s
  std::vector<Hop> up1 = t.route(gpu1.id, t.numa_of(gpu1.id));
  ASSERT_EQ(up1.size(), 1u);
  EXPECT_NEAR(t.hop_gbps(up1[0]), 16.0 * 8 * 128 / 130 / 8, 1e-9);  // Gen4 x8: 15.75 GB/s

  int nics = 0;
  for (const Node& n : t.nodes) {
    if (n.kind != NodeKind::Nic) continue;
    ++nics;
    EXPECT_EQ(n.pci_bus_id, "0000:5d:00.0");
    EXPECT_EQ(n.numa, t.numa_nodes()[0]);  // numa_node -1 counts as node 0
    EXPECT_GT(t.route(n.id, n.numa).size(), 0u);  // unknown speed gets a default, not 0
  }
  EXPECT_EQ(nics, 1);
  for (const Link& l : t.links) EXPECT_NE(l.kind, LinkKind::NvLink);  // no NVML in this test
  // The sockets are joined, so gpu0 -> gpu1 stages through both hosts.
  EXPECT_EQ(t.route(gpu0.id, gpu1.id).size(), 3u);
  EXPECT_EQ(t.check(), Result::Success);
}

TEST(Discover, FakeTreeWithoutNodeFolderHasOneNumaWithAllCores) {
  FakeSysfs sys;
  write(sys.root / "devices/system/cpu/online", "0-11");
  Topology t;
  ASSERT_EQ(discover_topology_at({sys.root.string(), false}, &t), Result::Success) << last_error();
  ASSERT_EQ(t.numa_nodes().size(), 1u);
  EXPECT_EQ(t.nodes[t.numa_nodes()[0]].cores, 12);
  EXPECT_EQ(t.gpu_count(), 0);
  EXPECT_EQ(rank_numa(t, 4), std::vector<int>(4, 0));
}

TEST(Discover, EmptyTreeStillGivesOneNumaNode) {
  FakeSysfs sys;
  fs::create_directories(sys.root);
  Topology t;
  ASSERT_EQ(discover_topology_at({sys.root.string(), true}, &t), Result::Success) << last_error();
  EXPECT_EQ(t.numa_nodes().size(), 1u);
  EXPECT_GE(t.nodes[0].cores, 1);
}

TEST(Discover, Parsers) {
  EXPECT_EQ(count_cpu_list("0-7,16-23"), 16);
  EXPECT_EQ(count_cpu_list("3"), 1);
  EXPECT_EQ(count_cpu_list("0,2,4-5"), 4);
  EXPECT_EQ(count_cpu_list(""), 0);
  EXPECT_EQ(count_cpu_list("7-3"), 0);
  EXPECT_NEAR(pcie_gbps_from_sysfs("32.0 GT/s PCIe", "16"), 63.015384615, 1e-6);
  EXPECT_NEAR(pcie_gbps_from_sysfs("8 GT/s", "x4"), 3.938461538, 1e-6);
  EXPECT_EQ(pcie_gbps_from_sysfs("Unknown", "16"), 0);
  EXPECT_EQ(pcie_gbps_from_sysfs("16.0 GT/s PCIe", ""), 0);
  EXPECT_EQ(normalize_pci_bus_id("00000000:1A:00.0"), "0000:1a:00.0");
  EXPECT_EQ(normalize_pci_bus_id("0000:1a:00.0"), "0000:1a:00.0");
  EXPECT_EQ(normalize_pci_bus_id("garbage"), "");
}

}  // namespace
}  // namespace braid::topo
