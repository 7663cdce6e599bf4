// The interposed CUDA runtime calls (cuda_gate.h). Which calls: those the host-block probe found
// to stop another thread's CUDA calls while a stream waits on a host word (cudaFree, a large
// cudaMalloc, cudaHostAlloc, cudaHostRegister, bench/results/h200x1-rig/host-block-allocators/),
// their siblings, and a kernel's first launch (or first query) from this process, which under lazy
// module loading loads its module (hang-stacks/, cuda-gate-stacks/). Later launches of a kernel pass
// with one table lookup. Libraries that load their kernels through the driver (cuBLAS, cuDNN,
// Triton) are not seen here.
#include "cuda_gate/cuda_gate.h"

#include <dlfcn.h>
#include <link.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

#define BRAID_GATE_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

std::atomic<const braid_cuda_gate_hooks*> g_hooks{nullptr};
std::atomic<unsigned long> g_bracketed{0};

// The runtime's own definition of `name`, as the caller at `return_address` would have bound it
// without the gate: looked up in the caller's own object and its dependencies (a handle's scope,
// which leaves out the global scope and with it the gate), so that a process holding two runtimes
// still reaches the caller's (after a tail call, the caller's caller's). Failing that, after this
// library in the global scope, or in any loaded runtime by name.
void* find_runtime_symbol(const char* name, void* self, void* return_address) {
  Dl_info caller{};
  if (return_address != nullptr && dladdr(return_address, &caller) != 0 && caller.dli_fname != nullptr) {
    if (void* handle = dlopen(caller.dli_fname, RTLD_LAZY | RTLD_NOLOAD)) {
      void* f = dlsym(handle, name);
      dlclose(handle);
      if (f != nullptr && f != self) return f;
    }
  }
  void* f = dlsym(RTLD_NEXT, name);
  if (f != nullptr && f != self) return f;
  struct Search {
    const char* name;
    void* self;
    void* found;
  } search{name, self, nullptr};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) -> int {
        auto* s = static_cast<Search*>(data);
        if (info->dlpi_name == nullptr || std::strstr(info->dlpi_name, "libcudart.so") == nullptr) return 0;
        void* handle = dlopen(info->dlpi_name, RTLD_LAZY | RTLD_NOLOAD);
        if (handle == nullptr) return 0;
        void* g = dlsym(handle, s->name);
        dlclose(handle);
        if (g == nullptr || g == s->self) return 0;
        s->found = g;
        return 1;
      },
      &search);
  return search.found;
}

// The resolved runtime function per call site (a return address calls one entry point, from one
// object), so that each caller reaches its own runtime: resolved at a site's first call, like lazy
// binding, then one probe. Full, a site shares the entry point's first resolution.
constexpr size_t kSiteSlots = size_t{1} << 15;
struct Site {
  std::atomic<uintptr_t> address{0};
  std::atomic<void*> function{nullptr};
};
Site g_sites[kSiteSlots];

size_t hash_slot(uintptr_t key, size_t slots) {
  return static_cast<size_t>((key >> 2) * 0x9E3779B97F4A7C15ull >> 40) % slots;
}

template <class Fn>
Fn runtime(std::atomic<Fn>& fallback, const char* name, Fn self, void* return_address) {
  const auto site = reinterpret_cast<uintptr_t>(return_address);
  size_t free_slot = kSiteSlots;
  for (size_t i = hash_slot(site, kSiteSlots), probes = 0; probes < 32; i = (i + 1) % kSiteSlots, ++probes) {
    const uintptr_t at = g_sites[i].address.load(std::memory_order_acquire);
    if (at == site) {
      if (void* f = g_sites[i].function.load(std::memory_order_acquire)) return reinterpret_cast<Fn>(f);
      break;  // being filled by another thread: resolve below
    }
    if (at == 0) {
      free_slot = i;
      break;
    }
  }
  if (free_slot == kSiteSlots) {
    if (Fn shared = fallback.load(std::memory_order_acquire)) return shared;
  }
  auto* f = reinterpret_cast<Fn>(find_runtime_symbol(name, reinterpret_cast<void*>(self), return_address));
  if (f == nullptr) return fallback.load(std::memory_order_acquire);
  Fn expected = nullptr;
  fallback.compare_exchange_strong(expected, f, std::memory_order_acq_rel);
  if (free_slot < kSiteSlots) {
    uintptr_t empty = 0;
    if (g_sites[free_slot].address.compare_exchange_strong(empty, site, std::memory_order_acq_rel))
      g_sites[free_slot].function.store(reinterpret_cast<void*>(f), std::memory_order_release);
  }
  return f;
}

// cudaErrorInitializationError: the runtime the caller linked cannot be found (never expected).
constexpr int kNoRuntime = 3;

class Bracket {
 public:
  explicit Bracket(const char* what) : hooks_(g_hooks.load(std::memory_order_acquire)) {
    if (hooks_ == nullptr) return;
    g_bracketed.fetch_add(1, std::memory_order_relaxed);
    hooks_->began(what);
  }
  ~Bracket() {
    if (hooks_ != nullptr) hooks_->ended();
  }
  Bracket(const Bracket&) = delete;
  Bracket& operator=(const Bracket&) = delete;

 private:
  const braid_cuda_gate_hooks* hooks_;
};

// Kernels launched once already (their module is loaded): open addressing, never removed. Full,
// it says "not seen", so launches stay bracketed (correct, only slower while braid is busy).
constexpr size_t kSeenSlots = size_t{1} << 16;
std::atomic<uintptr_t> g_seen[kSeenSlots];

bool seen(const void* func) {
  const auto key = reinterpret_cast<uintptr_t>(func);
  for (size_t i = hash_slot(key, kSeenSlots), probes = 0; probes < 64; i = (i + 1) % kSeenSlots, ++probes) {
    const uintptr_t k = g_seen[i].load(std::memory_order_acquire);
    if (k == key) return true;
    if (k == 0) return false;
  }
  return false;
}

void mark_seen(const void* func) {
  const auto key = reinterpret_cast<uintptr_t>(func);
  if (key == 0) return;
  for (size_t i = hash_slot(key, kSeenSlots), probes = 0; probes < 64; i = (i + 1) % kSeenSlots, ++probes) {
    uintptr_t k = g_seen[i].load(std::memory_order_acquire);
    if (k == key) return;
    if (k == 0 && g_seen[i].compare_exchange_strong(k, key, std::memory_order_acq_rel)) return;
    if (k == key) return;
  }
}

template <class Call>
int launch(const void* func, const char* what, Call call) {
  if (g_hooks.load(std::memory_order_acquire) == nullptr || seen(func)) return call();
  int r;
  {
    Bracket bracket(what);
    r = call();
  }
  if (r == 0) mark_seen(func);
  return r;
}

// dim3, as the runtime passes it by value.
struct Dim3 {
  unsigned x, y, z;
};

}  // namespace

BRAID_GATE_EXPORT void braid_cuda_gate_install(const braid_cuda_gate_hooks* hooks) {
  g_hooks.store(hooks, std::memory_order_release);
}

BRAID_GATE_EXPORT unsigned long braid_cuda_gate_bracketed(void) { return g_bracketed.load(std::memory_order_relaxed); }

// Each interposer: the runtime's function, bracketed. Signatures as in cuda_runtime_api.h (C ABI;
// cudaError_t is an int-sized enum, dim3 is passed by value, streams and configs are pointers).
// `real`: the runtime's own function for this call site; returns kNoRuntime when there is none.
#define BRAID_GATE_RESOLVE(name, params)                                                     \
  using Fn = int(*) params;                                                                  \
  static std::atomic<Fn> cache{nullptr};                                                     \
  const Fn real = runtime<Fn>(cache, #name, &name, __builtin_return_address(0));             \
  if (real == nullptr) return kNoRuntime

// A call that may wait for the whole device: bracketed every time.
#define BRAID_GATE_FORWARD(name, params, args) \
  BRAID_GATE_EXPORT int name params {          \
    BRAID_GATE_RESOLVE(name, params);          \
    Bracket bracket(#name);                    \
    return real args;                          \
  }

// A call that names a kernel and, under lazy loading, loads it on first use: bracketed only then.
#define BRAID_GATE_FIRST_USE(name, params, func, args)                  \
  BRAID_GATE_EXPORT int name params {                                   \
    BRAID_GATE_RESOLVE(name, params);                                   \
    return launch(func, #name, [&] { return real args; });              \
  }

BRAID_GATE_FORWARD(cudaFree, (void* p), (p))
BRAID_GATE_FORWARD(cudaMalloc, (void** p, size_t bytes), (p, bytes))
BRAID_GATE_FORWARD(cudaMallocHost, (void** p, size_t bytes), (p, bytes))
BRAID_GATE_FORWARD(cudaHostAlloc, (void** p, size_t bytes, unsigned flags), (p, bytes, flags))
BRAID_GATE_FORWARD(cudaFreeHost, (void* p), (p))
BRAID_GATE_FORWARD(cudaHostRegister, (void* p, size_t bytes, unsigned flags), (p, bytes, flags))
BRAID_GATE_FORWARD(cudaHostUnregister, (void* p), (p))

#define BRAID_GATE_LAUNCH_PARAMS (const void* func, Dim3 grid, Dim3 block, void** args, size_t shared, void* stream)
#define BRAID_GATE_LAUNCH_ARGS (func, grid, block, args, shared, stream)
BRAID_GATE_FIRST_USE(cudaLaunchKernel, BRAID_GATE_LAUNCH_PARAMS, func, BRAID_GATE_LAUNCH_ARGS)
BRAID_GATE_FIRST_USE(cudaLaunchKernel_ptsz, BRAID_GATE_LAUNCH_PARAMS, func, BRAID_GATE_LAUNCH_ARGS)
// What nvcc's launch stubs call since CUDA 12.8 (`kernel<<<...>>>`), with the kernel's handle from
// __cudaGetKernel in place of the stub's address.
BRAID_GATE_FIRST_USE(__cudaLaunchKernel, BRAID_GATE_LAUNCH_PARAMS, func, BRAID_GATE_LAUNCH_ARGS)
BRAID_GATE_FIRST_USE(__cudaLaunchKernel_ptsz, BRAID_GATE_LAUNCH_PARAMS, func, BRAID_GATE_LAUNCH_ARGS)
// cudaLaunchKernelExC(const cudaLaunchConfig_t*, const void* func, void** args).
BRAID_GATE_FIRST_USE(cudaLaunchKernelExC, (const void* config, const void* func, void** args), func, (config, func, args))
BRAID_GATE_FIRST_USE(cudaLaunchKernelExC_ptsz, (const void* config, const void* func, void** args), func,
                     (config, func, args))
BRAID_GATE_FIRST_USE(cudaFuncGetAttributes, (void* attributes, const void* func), func, (attributes, func))
BRAID_GATE_FIRST_USE(cudaFuncSetAttribute, (const void* func, int attribute, int value), func, (func, attribute, value))
BRAID_GATE_FIRST_USE(cudaOccupancyMaxActiveBlocksPerMultiprocessor,
                     (int* blocks, const void* func, int block_size, size_t shared), func, (blocks, func, block_size, shared))
BRAID_GATE_FIRST_USE(cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags,
                     (int* blocks, const void* func, int block_size, size_t shared, unsigned flags), func,
                     (blocks, func, block_size, shared, flags))
