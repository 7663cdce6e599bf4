// NVLink discovery through NVML, loaded at run time so braid needs no NVIDIA header or library
// to build or run. Only the few entry points used are declared, with NVML's documented C ABI.
#include <dlfcn.h>

#include <cstdio>
#include <cstring>
#include <vector>

#include "common/log.h"
#include "topo/discover.h"

namespace braid::topo {
namespace {

using NvmlReturn = int;  // nvmlReturn_t; 0 is NVML_SUCCESS
using NvmlDevice = void*;  // nvmlDevice_t, an opaque handle
constexpr NvmlReturn kNvmlSuccess = 0;
constexpr int kNvmlFeatureEnabled = 1;  // nvmlEnableState_t
constexpr unsigned kNvmlMaxLinks = 18;  // NVML_NVLINK_MAX_LINKS (Hopper has 18)

// nvmlPciInfo_t as nvml.h lays it out, padded generously in case a newer driver grows it.
struct NvmlPciInfo {
  char bus_id_legacy[16];
  unsigned domain;
  unsigned bus;
  unsigned device;
  unsigned pci_device_id;
  unsigned pci_sub_system_id;
  char bus_id[32];
  char reserved[256];
};

struct Nvml {
  void* library = nullptr;
  NvmlReturn (*init)() = nullptr;
  NvmlReturn (*shutdown)() = nullptr;
  NvmlReturn (*handle_by_bus_id)(const char*, NvmlDevice*) = nullptr;
  NvmlReturn (*link_state)(NvmlDevice, unsigned, int*) = nullptr;
  NvmlReturn (*remote_pci)(NvmlDevice, unsigned, NvmlPciInfo*) = nullptr;
  NvmlReturn (*own_pci)(NvmlDevice, NvmlPciInfo*) = nullptr;  // optional
  NvmlReturn (*remote_type)(NvmlDevice, unsigned, int*) = nullptr;  // optional

  ~Nvml() {
    if (init != nullptr && shutdown != nullptr && initialized) shutdown();
    if (library != nullptr) dlclose(library);
  }
  bool initialized = false;
};

template <typename Fn>
bool find_symbol(void* library, const char* name, Fn* out) {
  void* symbol = dlsym(library, name);
  if (symbol == nullptr) return false;
  *out = reinterpret_cast<Fn>(symbol);
  return true;
}

}  // namespace

std::string normalize_pci_bus_id(const std::string& text) {
  unsigned domain = 0, bus = 0, device = 0, function = 0;
  if (std::sscanf(text.c_str(), "%x:%x:%x.%x", &domain, &bus, &device, &function) != 4) return "";
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%04x:%02x:%02x.%x", domain, bus, device, function);
  return buffer;
}

bool query_nvlinks(const std::vector<std::string>& gpu_bus_ids, NvLinkCounts* out, std::string* why) {
  *out = NvLinkCounts{};
  Nvml nvml;
  nvml.library = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (nvml.library == nullptr) {
    *why = "libnvidia-ml.so.1 not found";
    return false;
  }
  if (!find_symbol(nvml.library, "nvmlInit_v2", &nvml.init) ||
      !find_symbol(nvml.library, "nvmlShutdown", &nvml.shutdown) ||
      !find_symbol(nvml.library, "nvmlDeviceGetHandleByPciBusId_v2", &nvml.handle_by_bus_id) ||
      !find_symbol(nvml.library, "nvmlDeviceGetNvLinkState", &nvml.link_state) ||
      !find_symbol(nvml.library, "nvmlDeviceGetNvLinkRemotePciInfo_v2", &nvml.remote_pci)) {
    *why = "libnvidia-ml.so.1 lacks an NVLink entry point";
    return false;
  }
  find_symbol(nvml.library, "nvmlDeviceGetPciInfo_v3", &nvml.own_pci);
  find_symbol(nvml.library, "nvmlDeviceGetNvLinkRemoteDeviceType", &nvml.remote_type);
  if (nvml.init() != kNvmlSuccess) {
    *why = "nvmlInit_v2 failed";
    return false;
  }
  nvml.initialized = true;

  const size_t count = gpu_bus_ids.size();
  NvLinkCounts counts;
  counts.between.assign(count, std::vector<int>(count, 0));
  counts.to_other.assign(count, 0);
  std::vector<NvmlDevice> devices(count, nullptr);
  // Each GPU's id as sysfs spells it and as NVML reports it (they differ in some VMs).
  std::vector<std::string> sysfs_ids(count), nvml_ids(count);
  for (size_t i = 0; i < count; ++i) {
    if (nvml.handle_by_bus_id(gpu_bus_ids[i].c_str(), &devices[i]) != kNvmlSuccess) {
      *why = "nvmlDeviceGetHandleByPciBusId_v2 failed for " + gpu_bus_ids[i];
      return false;
    }
    sysfs_ids[i] = normalize_pci_bus_id(gpu_bus_ids[i]);
    NvmlPciInfo own;
    std::memset(&own, 0, sizeof(own));
    if (nvml.own_pci != nullptr && nvml.own_pci(devices[i], &own) == kNvmlSuccess)
      nvml_ids[i] = normalize_pci_bus_id(std::string(own.bus_id, strnlen(own.bus_id, sizeof(own.bus_id))));
  }
  for (size_t i = 0; i < count; ++i) {
    NvmlDevice device = devices[i];
    for (unsigned link = 0; link < kNvmlMaxLinks; ++link) {
      int state = 0;
      if (nvml.link_state(device, link, &state) != kNvmlSuccess || state != kNvmlFeatureEnabled) continue;
      NvmlPciInfo remote;
      std::memset(&remote, 0, sizeof(remote));
      if (nvml.remote_pci(device, link, &remote) != kNvmlSuccess) continue;
      std::string remote_id =
          normalize_pci_bus_id(std::string(remote.bus_id, strnlen(remote.bus_id, sizeof(remote.bus_id))));
      if (remote_id.empty()) {  // older drivers fill only the numeric fields
        char buffer[32];
        std::snprintf(buffer, sizeof(buffer), "%04x:%02x:%02x.0", remote.domain, remote.bus, remote.device);
        remote_id = buffer;
      }
      int remote_kind = -1;
      if (nvml.remote_type != nullptr && nvml.remote_type(device, link, &remote_kind) != kNvmlSuccess)
        remote_kind = -1;
      BRAID_TRACE(Topo, "NVML: %s link %u is up, far end %s (type %d)", gpu_bus_ids[i].c_str(), link,
                  remote_id.c_str(), remote_kind);
      bool matched = false;
      for (size_t j = 0; j < count && !remote_id.empty(); ++j) {
        if (j != i && (sysfs_ids[j] == remote_id || nvml_ids[j] == remote_id)) {
          ++counts.between[i][j];
          matched = true;
          break;
        }
      }
      if (!matched) ++counts.to_other[i];
    }
  }
  *out = std::move(counts);
  return true;
}

}  // namespace braid::topo
