#include "cuda/peer_reduce.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "cuda/device_arith.cuh"

namespace braid::cuda {

namespace {

using namespace arith;

// Vectors of 16 bytes each thread keeps in flight per input: loads from a peer's memory cross
// NVLink (~1-2 us), so every SM needs many outstanding at once to fill the link.
constexpr int kUnroll = 4;

// How one element is combined: Avg is a Sum with each float input scaled by 1/n first (in the
// element type, as braid's engine and NCCL do) or an integer sum divided at the end.
template <typename T>
struct Combine {
  using C = typename Arith<T>::Compute;
  RedOp op;  // Avg arrives as Sum
  bool avg;
  int n;
  C scale;

  __device__ C first(T v) const {
    C c = Arith<T>::load(v);
    if constexpr (std::is_floating_point_v<C>)
      if (avg) c = c * scale;
    return c;
  }
  __device__ C next(C acc, T v) const { return wrap_combine(op, acc, first(v)); }
  __device__ T finish(C acc) const {
    if constexpr (!std::is_floating_point_v<C>)
      if (avg) acc = static_cast<C>(acc / static_cast<C>(n));
    return Arith<T>::store(acc);
  }
};

template <typename T>
__device__ Combine<T> make_combine(RedOp op, int n) {
  using C = typename Arith<T>::Compute;
  const bool avg = op == RedOp::Avg;
  C scale{};
  if constexpr (std::is_floating_point_v<C>) scale = Arith<T>::load(Arith<T>::store(static_cast<C>(1.0 / n)));
  return Combine<T>{avg ? RedOp::Sum : op, avg, n, scale};
}

template <typename T>
__global__ void __launch_bounds__(512) reduce_to_all_kernel(RedOp op, PeerOperands o, size_t n, bool vectors) {
  constexpr int E = 16 / sizeof(T);
  using C = typename Arith<T>::Compute;
  const Combine<T> combine = make_combine<T>(op, o.n_inputs);
  const size_t threads = static_cast<size_t>(gridDim.x) * blockDim.x;
  const size_t tid = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  size_t scalar_from = 0;
  if (vectors) {
    const size_t nvec = n / E;
    for (size_t v0 = tid; v0 < nvec; v0 += threads * kUnroll) {
      C acc[kUnroll][E];
      uint4 raw[2][kUnroll] = {};
      // The first two inputs (this rank's and a peer's, usually) are loaded together.
      for (int j = 0; j < 2 && j < o.n_inputs; ++j) {
#pragma unroll
        for (int k = 0; k < kUnroll; ++k) {
          const size_t v = v0 + k * threads;
          if (v < nvec) raw[j][k] = static_cast<const uint4*>(o.inputs[j])[v];
        }
      }
#pragma unroll
      for (int k = 0; k < kUnroll; ++k) {
        T a[E];
        std::memcpy(a, &raw[0][k], 16);
#pragma unroll
        for (int e = 0; e < E; ++e) acc[k][e] = combine.first(a[e]);
      }
      for (int j = 1; j < o.n_inputs; ++j) {
        if (j >= 2) {
#pragma unroll
          for (int k = 0; k < kUnroll; ++k) {
            const size_t v = v0 + k * threads;
            if (v < nvec) raw[1][k] = static_cast<const uint4*>(o.inputs[j])[v];
          }
        }
#pragma unroll
        for (int k = 0; k < kUnroll; ++k) {
          T b[E];
          std::memcpy(b, &raw[1][k], 16);
#pragma unroll
          for (int e = 0; e < E; ++e) acc[k][e] = combine.next(acc[k][e], b[e]);
        }
      }
#pragma unroll
      for (int k = 0; k < kUnroll; ++k) {
        const size_t v = v0 + k * threads;
        if (v >= nvec) continue;
        T r[E];
#pragma unroll
        for (int e = 0; e < E; ++e) r[e] = combine.finish(acc[k][e]);
        uint4 packed;
        std::memcpy(&packed, r, 16);
        for (int j = 0; j < o.n_outputs; ++j) static_cast<uint4*>(o.outputs[j])[v] = packed;
      }
    }
    scalar_from = nvec * E;
  }
  for (size_t i = scalar_from + tid; i < n; i += threads) {
    C acc = combine.first(static_cast<const T*>(o.inputs[0])[i]);
    for (int j = 1; j < o.n_inputs; ++j) acc = combine.next(acc, static_cast<const T*>(o.inputs[j])[i]);
    const T r = combine.finish(acc);
    for (int j = 0; j < o.n_outputs; ++j) static_cast<T*>(o.outputs[j])[i] = r;
  }
}

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

}  // namespace

cudaError_t reduce_to_all(DataType type, RedOp op, const PeerOperands& operands, size_t n, cudaStream_t stream,
                          unsigned blocks, unsigned threads) {
  if (n == 0) return cudaSuccess;
  if (op == RedOp::PreMulSum || operands.n_inputs < 1 || operands.n_inputs > kMaxPeerOperands ||
      operands.n_outputs < 1 || operands.n_outputs > kMaxPeerOperands || threads == 0 || threads > 512)
    return cudaErrorInvalidValue;
  bool vectors = true;
  for (int j = 0; j < operands.n_inputs; ++j) vectors = vectors && aligned16(operands.inputs[j]);
  for (int j = 0; j < operands.n_outputs; ++j) vectors = vectors && aligned16(operands.outputs[j]);
  return dispatch(type, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    const size_t per_thread = vectors ? (16 / sizeof(T)) * kUnroll : 1;
    const size_t want = (n + per_thread * threads - 1) / (per_thread * threads);
    const auto grid = static_cast<unsigned>(std::clamp<size_t>(want, 1, std::max(1u, blocks)));
    reduce_to_all_kernel<T><<<grid, threads, 0, stream>>>(op, operands, n, vectors);
    return cudaGetLastError();
  });
}

cudaError_t copy_on_sms(void* dst, const void* src, size_t bytes, cudaStream_t stream) {
  if (!aligned16(dst) || !aligned16(src)) return cudaErrorInvalidValue;
  PeerOperands o;
  o.inputs[0] = src;
  o.n_inputs = 1;
  o.outputs[0] = dst;
  o.n_outputs = 1;
  return reduce_to_all(DataType::Uint8, RedOp::Sum, o, bytes, stream, kPeerReduceBlocks, kPeerReduceThreads);
}

cudaError_t load_peer_reduce_kernels() {
  for (int t = 0; t < kNumDataTypes; ++t) {
    const cudaError_t e = dispatch(static_cast<DataType>(t), [](auto* tag) {
      using T = std::remove_pointer_t<decltype(tag)>;
      cudaFuncAttributes a;
      return cudaFuncGetAttributes(&a, reduce_to_all_kernel<T>);
    });
    if (e != cudaSuccess) return e;
  }
  return cudaSuccess;
}

}  // namespace braid::cuda
