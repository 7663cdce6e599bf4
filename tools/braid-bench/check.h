// Fatal-error checks for braid-bench: a benchmark that hit an error has nothing to report, so
// it prints where and why and exits with status 2 (also from rank threads).
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include "braid/braid.h"

namespace braid::bench {

[[noreturn, gnu::format(printf, 1, 2)]] void die(const char* fmt, ...);

}  // namespace braid::bench

#define BENCH_CUDA(call)                                                                    \
  do {                                                                                      \
    const cudaError_t bench_e_ = (call);                                                    \
    if (bench_e_ != cudaSuccess)                                                            \
      ::braid::bench::die("%s:%d: %s: %s", __FILE__, __LINE__, #call,                       \
                          cudaGetErrorString(bench_e_));                                    \
  } while (0)

#define BENCH_NCCL(call)                                                                    \
  do {                                                                                      \
    const ncclResult_t bench_r_ = (call);                                                   \
    if (bench_r_ != ncclSuccess)                                                            \
      ::braid::bench::die("%s:%d: %s: %s (%s)", __FILE__, __LINE__, #call,                  \
                          ncclGetErrorString(bench_r_), ncclGetLastError(nullptr));         \
  } while (0)

#define BENCH_BRAID(call, comm)                                                             \
  do {                                                                                      \
    const ncclResult_t bench_r_ = (call);                                                   \
    if (bench_r_ != ncclSuccess)                                                            \
      ::braid::bench::die("%s:%d: %s: %s (%s)", __FILE__, __LINE__, #call,                  \
                          braidGetErrorString(bench_r_), braidGetLastError(comm));          \
  } while (0)
