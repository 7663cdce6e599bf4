// Loads the drop-in's companion, libbraid-cuda-gate.so (src/cuda_gate/), from libbraid.so's own
// folder into the process's global scope as libbraid.so is loaded: before the application's CUDA
// runtime, so that the runtime's callers bind to the gate's interposers. Then installs braid's
// hooks (common/lane_gate.h) in it. It reads BRAID_CUDA_GATE itself and logs nothing: braid's
// settings and log are read once, at the first NCCL call, and a program may set them until then.
#include <dlfcn.h>

#include <cstdlib>

#include <string>

#include "common/lane_gate.h"
#include "cuda_gate/cuda_gate.h"
#include "common/preload_setting.h"
#include "cuda/module_loading.h"

namespace braid::shim {
namespace {

void began(const char* what) { device_wide_call_began(what); }
void ended() { device_wide_call_ended(); }

const braid_cuda_gate_hooks kHooks{&began, &ended};

std::string own_folder() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&own_folder), &info) == 0 || info.dli_fname == nullptr) return {};
  const std::string path = info.dli_fname;
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? std::string(".") : path.substr(0, slash);
}

// Only where braid's progress thread may queue GPU work at all: braid's PCIe share runs only in
// processes that load CUDA modules eagerly (the application's choice, multipath/paths_admitted.h),
// so elsewhere the application's CUDA calls are not interposed. BRAID_CUDA_GATE=1 loads it
// anyway, 0 never.
bool gate_wanted() {
  // A pass-through (BRAID_DISABLE=1) runs nothing of braid's: nothing to hold back for.
  if (std::getenv("BRAID_DISABLE") != nullptr && preload_setting_on("BRAID_DISABLE")) return false;
  if (std::getenv("BRAID_CUDA_GATE") != nullptr) return preload_setting_on("BRAID_CUDA_GATE");
  return cuda::environment_asks_for_eager_loading();
}

__attribute__((constructor)) void load_cuda_gate() {
  if (!gate_wanted()) return;
  const std::string path = own_folder() + "/libbraid-cuda-gate.so";
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (handle == nullptr) return;  // calls then go straight to the runtime; the lane watch stays the backstop
  auto install = reinterpret_cast<void (*)(const braid_cuda_gate_hooks*)>(dlsym(handle, "braid_cuda_gate_install"));
  if (install != nullptr) install(&kHooks);
}

}  // namespace
}  // namespace braid::shim
