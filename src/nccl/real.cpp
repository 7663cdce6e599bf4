#include "nccl/real.h"

#include <dlfcn.h>

#include "common/log.h"
#include "common/settings.h"

#ifndef BRAID_VERSION_STRING
#define BRAID_VERSION_STRING "unknown"
#endif

namespace braid::nccl {

namespace {

// The start of libbraid.so in memory: entry points there are braid's, not NCCL's.
const void* own_base() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<const void*>(&own_base), &info) == 0) return nullptr;
  return info.dli_fbase;
}

std::string dl_error_text() {
  const char* text = dlerror();
  return text ? text : "unknown dlopen error";
}

// Fills `real` from `handle` when it is a real NCCL; else appends why not to real.failure.
bool adopt(void* handle, const std::string& tried, const char* how, RealNccl& real) {
  Dl_info info{};
  // The library named may be braid itself (a libnccl.so.2 link to libbraid.so, say): its
  // public entry points then lie in braid, and forwarding would loop.
  void* api_entry = dlsym(handle, "ncclGetVersion");
  if (api_entry != nullptr && dladdr(api_entry, &info) != 0 && info.dli_fbase == own_base()) {
    real.failure += tried + ": resolves to braid's own libbraid.so, not the real NCCL; ";
    return false;
  }
  void* probe = dlsym(handle, "pncclGetVersion");
  if (probe == nullptr || dladdr(probe, &info) == 0) {
    real.failure += tried + ": has no pncclGetVersion (not an NCCL 2 library); ";
    return false;
  }
  if (info.dli_fbase == own_base()) {
    real.failure += tried + ": resolves to braid's own libbraid.so, not the real NCCL; ";
    return false;
  }
#define BRAID_SHIM_RESOLVE(name)                                                     \
  {                                                                                  \
    void* entry = dlsym(handle, "p" #name);                                          \
    Dl_info entry_info{};                                                            \
    if (entry != nullptr && dladdr(entry, &entry_info) != 0 &&                       \
        entry_info.dli_fbase != own_base()) {                                        \
      real.name = reinterpret_cast<decltype(real.name)>(entry);                      \
    }                                                                                \
  }
  BRAID_NCCL_FUNCTIONS(BRAID_SHIM_RESOLVE)
#undef BRAID_SHIM_RESOLVE
  real.found = true;
  real.failure.clear();
  real.path = info.dli_fname ? info.dli_fname : tried;
  real.how = how;
  if (real.ncclGetVersion(&real.version) != ncclSuccess) real.version = 0;
  return true;
}

RealNccl resolve() {
  RealNccl real;
  const std::string& configured = settings().nccl_library;
  if (!configured.empty()) {
    // The user named a library: using another one behind their back would mislead.
    const std::string tried = "BRAID_NCCL_LIBRARY=" + configured;
    if (void* handle = dlopen(configured.c_str(), RTLD_LAZY | RTLD_LOCAL)) {
      adopt(handle, tried, "BRAID_NCCL_LIBRARY", real);
    } else {
      real.failure += tried + ": " + dl_error_text() + "; ";
    }
  } else {
    real.failure += "BRAID_NCCL_LIBRARY: unset; ";
    void* handle = dlopen("libnccl.so.2", RTLD_NOLOAD | RTLD_LAZY);
    if (handle == nullptr) {
      real.failure += "libnccl.so.2 already loaded by the application: no; ";
    } else if (!adopt(handle, "libnccl.so.2 already loaded by the application", "already loaded", real)) {
      handle = nullptr;
    }
    if (!real.found) {
      handle = dlopen("libnccl.so.2", RTLD_LAZY | RTLD_LOCAL);
      if (handle == nullptr) {
        real.failure += "libnccl.so.2 from the loader's search path: " + dl_error_text() + "; ";
      } else {
        adopt(handle, "libnccl.so.2 from the loader's search path", "loader search path", real);
      }
    }
  }
  if (!real.found) {
    real.failure = "braid cannot find the real NCCL (tried " + real.failure +
                   "set BRAID_NCCL_LIBRARY to the real libnccl.so.2)";
    BRAID_WARN(Shim, "%s", real.failure.c_str());
    return real;
  }
  const char* mode = settings().disable ? "pass-through (BRAID_DISABLE=1)"
                                        : "large collectives outside groups are split across NCCL and braid's PCIe path";
  BRAID_INFO(Shim, "braid %s NCCL drop-in: real NCCL %s version %d.%d.%d (%d), found via %s; %s",
             BRAID_VERSION_STRING, real.path.c_str(), real.version / 10000, real.version / 100 % 100,
             real.version % 100, real.version, real.how.c_str(), mode);
  return real;
}

}  // namespace

const RealNccl& real_nccl() {
  // Never destroyed: NCCL may still be called from other libraries' exit handlers.
  static const RealNccl* real = new RealNccl(resolve());
  return *real;
}

}  // namespace braid::nccl
