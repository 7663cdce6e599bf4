// What the peer layer's GPU tests share: processes fork()ed to run on GPU 0 (the parent never
// touches CUDA, which a fork()ed child could not use), checks that end such a process, and cuMem
// allocations made as ncclMemAlloc makes them.
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>
#include <cstdio>
#include <functional>
#include <vector>

#include "common/result.h"
#include "cuda/driver_calls.h"
#include "support/forked_ranks.h"

namespace braid::peer {

// In a fork()ed process: a failed check says where and why, and the process exits 1.
#define CHECK(cond)                                                                                 \
  do {                                                                                              \
    if (!(cond)) {                                                                                  \
      std::fprintf(stderr, "%s:%d: check failed: %s (last error: %s)\n", __FILE__, __LINE__, #cond, \
                   ::braid::last_error());                                                          \
      return 1;                                                                                     \
    }                                                                                               \
  } while (0)

// Each role in a fork()ed process of its own with GPU 0's primary context current (cuMemCreate
// needs one), killed at 120 s so that a hang fails the test; every one must exit 0.
// `forked` runs in the parent once all are started (to close its copies of what joins them).
inline void run_in_processes(const std::vector<std::function<int()>>& roles, const std::function<void()>& forked = {}) {
  std::vector<std::function<int()>> on_gpu;
  for (const auto& role : roles)
    on_gpu.push_back([&role] {
      const bool started = cudaSetDevice(0) == cudaSuccess && cudaFree(nullptr) == cudaSuccess;
      if (!started) std::fprintf(stderr, "no CUDA context on GPU 0\n");
      return started ? role() : 2;
    });
  const std::vector<test::RankExit> exits = test::run_forked(on_gpu, std::chrono::seconds(120), forked);
  for (size_t i = 0; i < exits.size(); ++i) EXPECT_TRUE(exits[i].ok()) << "process " << i << ": " << exits[i].what();
}

// With the handle types asked for; needs a current context (cudaFree(nullptr) makes one).
struct CuMemBuffer {
  CUdeviceptr ptr = 0;
  size_t size = 0;
  CUmemGenericAllocationHandle handle = 0;

  bool allocate(size_t bytes, CUmemAllocationHandleType types) {
    static const auto create = [] {
      void* fn = nullptr;
      cudaDriverEntryPointQueryResult found{};
      cudaGetDriverEntryPointByVersion("cuMemCreate", &fn, 12000, cudaEnableDefault, &found);
      return found == cudaDriverEntryPointSuccess ? reinterpret_cast<decltype(&cuMemCreate)>(fn) : nullptr;
    }();
    const cuda::DriverCalls& d = cuda::driver();
    CUmemAllocationProp prop{};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    prop.requestedHandleTypes = types;
    size_t granularity = 0;
    if (create == nullptr || !d.cumem_complete() ||
        d.mem_get_allocation_granularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) != CUDA_SUCCESS)
      return false;
    size = (bytes + granularity - 1) / granularity * granularity;
    CUmemAccessDesc access{};
    access.location = prop.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    return create(&handle, size, &prop, 0) == CUDA_SUCCESS &&
           d.mem_address_reserve(&ptr, size, granularity, 0, 0) == CUDA_SUCCESS &&
           d.mem_map(ptr, size, 0, handle, 0) == CUDA_SUCCESS && d.mem_set_access(ptr, size, &access, 1) == CUDA_SUCCESS;
  }
  void free() {
    const cuda::DriverCalls& d = cuda::driver();
    d.mem_unmap(ptr, size);
    d.mem_address_free(ptr, size);
    d.mem_release(handle);
    ptr = 0;
  }
  unsigned char* at(size_t offset) const { return reinterpret_cast<unsigned char*>(ptr) + offset; }
};

}  // namespace braid::peer
