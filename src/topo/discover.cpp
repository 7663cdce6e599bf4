// Discovery of this machine from sysfs: NUMA nodes and their cores, NVIDIA GPUs and NICs on
// PCIe with their NUMA node and link bandwidth, and NVLinks through NVML when a driver is there.
// Host memory bandwidth and copy rates cannot be read from sysfs: they stay 0 ("unknown") and
// consumers use their defaults.
#include "topo/discover.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <system_error>
#include <thread>

#include "common/log.h"

namespace braid::topo {
namespace {

namespace fs = std::filesystem;

constexpr unsigned kNvidiaVendor = 0x10de;
// NVLink 4 (Hopper) carries 26.6 GB/s per link per direction. ASSUMPTION: discovery does not
// read the GPU generation, so every NVLink is counted at the Hopper figure.
constexpr double kNvLinkGbpsPerLink = 26.6;
// Used when sysfs does not say a device's link speed (virtual machines often do not): a
// PCIe Gen4 x16 link, 16 GT/s * 16 * 128/130 / 8.
constexpr double kUnknownPcieGbps = 16.0 * 16 * 128 / 130 / 8;
constexpr double kPcieLatencyUs = 1.0;
constexpr double kNvLinkLatencyUs = 0.5;

// The first line of a file, trimmed; empty when unreadable.
std::string read_line(const fs::path& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) return "";
  auto not_space = [](unsigned char c) { return !std::isspace(c); };
  line.erase(line.begin(), std::find_if(line.begin(), line.end(), not_space));
  line.erase(std::find_if(line.rbegin(), line.rend(), not_space).base(), line.end());
  return line;
}

// A hex number like "0x10de" from a sysfs file; -1 when unreadable.
long read_hex(const fs::path& path) {
  std::string text = read_line(path);
  if (text.empty()) return -1;
  char* end = nullptr;
  long value = std::strtol(text.c_str(), &end, 16);
  return end == text.c_str() ? -1 : value;
}

struct SysNuma {
  int number = 0;  // N of nodeN
  int cores = 0;
};

std::vector<SysNuma> read_numa_nodes(const fs::path& root) {
  std::vector<SysNuma> found;
  std::error_code ec;
  for (fs::directory_iterator it(root / "devices/system/node", ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (name.size() <= 4 || name.compare(0, 4, "node") != 0) continue;
    if (!std::all_of(name.begin() + 4, name.end(), [](unsigned char c) { return std::isdigit(c); })) continue;
    SysNuma numa;
    numa.number = std::atoi(name.c_str() + 4);
    numa.cores = count_cpu_list(read_line(it->path() / "cpulist"));
    found.push_back(numa);
  }
  std::sort(found.begin(), found.end(), [](const SysNuma& a, const SysNuma& b) { return a.number < b.number; });
  return found;
}

struct SysPciDevice {
  std::string bus_id;
  int numa_number = -1;
  double gbps = 0;
};

struct SysPci {
  std::vector<SysPciDevice> gpus;
  std::vector<SysPciDevice> nics;
};

SysPci read_pci_devices(const fs::path& root) {
  std::vector<fs::path> devices;
  std::error_code ec;
  for (fs::directory_iterator it(root / "bus/pci/devices", ec), end; !ec && it != end; it.increment(ec))
    devices.push_back(it->path());
  std::sort(devices.begin(), devices.end());  // by bus id, so names are stable run to run
  SysPci pci;
  for (const fs::path& dir : devices) {
    long vendor = read_hex(dir / "vendor");
    long device_class = read_hex(dir / "class");
    if (vendor < 0 || device_class < 0) continue;
    long base_and_sub = device_class >> 8;  // 0xCCSSPP -> 0xCCSS
    bool gpu = vendor == kNvidiaVendor && (base_and_sub == 0x0300 || base_and_sub == 0x0302);
    bool nic = base_and_sub == 0x0200 || base_and_sub == 0x0207;
    if (!gpu && !nic) continue;
    SysPciDevice d;
    d.bus_id = dir.filename().string();
    std::string numa_text = read_line(dir / "numa_node");
    d.numa_number = numa_text.empty() ? -1 : std::atoi(numa_text.c_str());
    d.gbps = pcie_gbps_from_sysfs(read_line(dir / "current_link_speed"), read_line(dir / "current_link_width"));
    if (d.gbps <= 0) {
      BRAID_INFO(Topo, "PCIe link speed of %s unknown; assuming Gen4 x16 (%.1f GB/s per direction)",
                 d.bus_id.c_str(), kUnknownPcieGbps);
      d.gbps = kUnknownPcieGbps;
    }
    (gpu ? pci.gpus : pci.nics).push_back(d);
  }
  return pci;
}

int cpus_online(const fs::path& root) {
  int n = count_cpu_list(read_line(root / "devices/system/cpu/online"));
  if (n > 0) return n;
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

void add_nvlinks(Topology* t, const std::vector<int>& gpu_ids) {
  std::vector<std::string> bus_ids;
  for (int id : gpu_ids) bus_ids.push_back(t->nodes[id].pci_bus_id);
  NvLinkCounts counts;
  std::string why;
  if (!query_nvlinks(bus_ids, &counts, &why)) {
    BRAID_INFO(Topo, "No NVLink information (%s): the topology has no NVLink links", why.c_str());
    return;
  }
  int links_added = 0;
  for (size_t i = 0; i < gpu_ids.size(); ++i) {
    for (size_t j = i + 1; j < gpu_ids.size(); ++j) {
      int lanes = std::max(counts.between[i][j], counts.between[j][i]);
      if (lanes == 0) continue;
      double gbps = lanes * kNvLinkGbpsPerLink;
      t->links.push_back({gpu_ids[i], gpu_ids[j], LinkKind::NvLink, gbps, gbps, kNvLinkLatencyUs});
      ++links_added;
    }
  }
  // Links ending elsewhere go to NVSwitches (NVML reports them as device type 2 with bus id
  // ffffffff:ff:ff.0, as on our 2x H200 VM); one node stands for the server's switch plane.
  int switch_id = -1;
  for (size_t i = 0; i < gpu_ids.size(); ++i) {
    if (counts.to_other[i] == 0) continue;
    if (switch_id < 0) {
      Node sw;
      sw.id = switch_id = static_cast<int>(t->nodes.size());
      sw.kind = NodeKind::NvSwitch;
      sw.name = "nvswitch0";
      t->nodes.push_back(sw);
    }
    double gbps = counts.to_other[i] * kNvLinkGbpsPerLink;
    t->links.push_back({gpu_ids[i], switch_id, LinkKind::NvLink, gbps, gbps, kNvLinkLatencyUs});
    ++links_added;
  }
  BRAID_INFO(Topo, "NVML: %d NVLink connections at an assumed %.1f GB/s per link per direction", links_added,
             kNvLinkGbpsPerLink);
}

}  // namespace

int count_cpu_list(const std::string& text) {
  int count = 0;
  std::stringstream parts(text);
  std::string part;
  while (std::getline(parts, part, ',')) {
    if (part.empty()) continue;
    int first = 0, last = 0;
    char dash = 0;
    std::stringstream range(part);
    if (!(range >> first)) return 0;
    if (range >> dash) {
      if (dash != '-' || !(range >> last) || last < first) return 0;
    } else {
      last = first;
    }
    count += last - first + 1;
  }
  return count;
}

double pcie_gbps_from_sysfs(const std::string& speed_text, const std::string& width_text) {
  char* end = nullptr;
  double gt_per_s = std::strtod(speed_text.c_str(), &end);
  if (end == speed_text.c_str() || gt_per_s <= 0) return 0;
  std::string width = width_text;
  if (!width.empty() && (width[0] == 'x' || width[0] == 'X')) width.erase(0, 1);
  int lanes = std::atoi(width.c_str());
  if (lanes <= 0) return 0;
  return gt_per_s * lanes * 128.0 / 130.0 / 8.0;
}

Result discover_topology_at(const DiscoverOptions& options, Topology* out) {
  if (out == nullptr) return fail(Result::InvalidArgument, "discover_topology: out is null");
  const fs::path root = options.sysfs_root;
  Topology t;
  t.name = "discovered";
  t.description = "Discovered from sysfs" + std::string(options.use_nvml ? " and NVML" : "") +
                  "; memory and copy bandwidths unknown (0)";

  std::vector<SysNuma> numas = read_numa_nodes(root);
  if (numas.empty()) numas.push_back({0, cpus_online(root)});
  std::map<int, int> numa_id_of_number;
  for (const SysNuma& n : numas) {
    Node node;
    node.id = static_cast<int>(t.nodes.size());
    node.kind = NodeKind::Numa;
    node.name = "numa" + std::to_string(n.number);
    node.cores = n.cores;
    numa_id_of_number[n.number] = node.id;
    t.nodes.push_back(node);
  }
  auto numa_id = [&](int number) {
    auto it = numa_id_of_number.find(number);
    return it == numa_id_of_number.end() ? 0 : it->second;  // -1 or unknown: the first node
  };

  SysPci pci = read_pci_devices(root);
  std::vector<int> gpu_ids;
  auto add_device = [&](const SysPciDevice& d, NodeKind kind, const std::string& name) {
    Node node;
    node.id = static_cast<int>(t.nodes.size());
    node.kind = kind;
    node.name = name;
    node.numa = numa_id(d.numa_number);
    node.pci_bus_id = d.bus_id;
    t.nodes.push_back(node);
    t.links.push_back({node.id, node.numa, LinkKind::Pcie, d.gbps, d.gbps, kPcieLatencyUs});
    return node.id;
  };
  for (size_t i = 0; i < pci.gpus.size(); ++i)
    gpu_ids.push_back(add_device(pci.gpus[i], NodeKind::Gpu, "gpu" + std::to_string(i)));
  for (size_t i = 0; i < pci.nics.size(); ++i) add_device(pci.nics[i], NodeKind::Nic, "nic" + std::to_string(i));

  // NUMA nodes are joined pairwise so host-to-host routes exist; sysfs gives no inter-socket
  // bandwidth, so the links carry a nominal figure. ASSUMPTION: 50 GB/s per direction.
  for (size_t i = 0; i < numas.size(); ++i)
    for (size_t j = i + 1; j < numas.size(); ++j)
      t.links.push_back({static_cast<int>(i), static_cast<int>(j), LinkKind::InterSocket, 50.0, 50.0, 0.3});

  if (!gpu_ids.empty() && options.use_nvml) add_nvlinks(&t, gpu_ids);
  BRAID_INFO(Topo, "Discovered %zu NUMA node(s), %zu GPU(s), %zu NIC(s)", numas.size(), pci.gpus.size(),
             pci.nics.size());
  Result r = t.check();
  if (r != Result::Success) return r;
  *out = std::move(t);
  return Result::Success;
}

Result discover_topology(Topology* out) { return discover_topology_at(DiscoverOptions{}, out); }

}  // namespace braid::topo
