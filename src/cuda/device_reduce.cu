#include "cuda/device_reduce.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "cuda/device_arith.cuh"

namespace braid::cuda {

namespace {

using namespace arith;

template <typename T>
__global__ void accumulate_kernel(RedOp op, T* dst, const T* src, size_t n, typename Arith<T>::Compute s_dst,
                                  typename Arith<T>::Compute s_src, bool scale_dst, bool scale_src) {
  using A = Arith<T>;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    auto a = A::load(dst[i]);
    auto b = A::load(src[i]);
    if (scale_dst) a = wrap_mul(a, s_dst);
    if (scale_src) b = wrap_mul(b, s_src);
    dst[i] = A::store(wrap_combine(op, a, b));
  }
}

template <typename T>
__global__ void scale_kernel(T* dst, const T* src, size_t n, typename Arith<T>::Compute s) {
  using A = Arith<T>;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    dst[i] = A::store(wrap_mul(A::load(src[i]), s));
}

template <typename T>
__global__ void divide_kernel(T* data, size_t n, uint64_t divisor) {
  using A = Arith<T>;
  using C = typename A::Compute;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    if constexpr (std::is_floating_point_v<C>) data[i] = A::store(A::load(data[i]) * (C(1) / C(divisor)));
    else data[i] = static_cast<T>(A::load(data[i]) / static_cast<C>(divisor));
  }
}

void launch_shape(size_t n, unsigned max_blocks, unsigned* blocks, unsigned* threads) {
  *threads = 256;
  const size_t cap = std::max(1u, max_blocks);
  const size_t want = std::max<size_t>(1, (n + *threads - 1) / *threads);
  *blocks = static_cast<unsigned>(std::min(want, cap));
}

}  // namespace

cudaError_t accumulate(DataType type, RedOp op, void* dst, const void* src, size_t n,
                       const DeviceScalar* dst_scale, const DeviceScalar* src_scale, cudaStream_t stream,
                       unsigned max_blocks) {
  if (n == 0) return cudaSuccess;
  return dispatch(type, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    unsigned blocks, threads;
    launch_shape(n, max_blocks, &blocks, &threads);
    using C = typename Arith<T>::Compute;
    const C s_dst = dst_scale ? host_scalar<T>(*dst_scale) : C{};
    const C s_src = src_scale ? host_scalar<T>(*src_scale) : C{};
    accumulate_kernel<T><<<blocks, threads, 0, stream>>>(op, static_cast<T*>(dst), static_cast<const T*>(src), n,
                                                         s_dst, s_src, dst_scale != nullptr, src_scale != nullptr);
    return cudaGetLastError();
  });
}

cudaError_t scale(DataType type, void* dst, const void* src, size_t n, const DeviceScalar& scalar,
                  cudaStream_t stream, unsigned max_blocks) {
  if (n == 0) return cudaSuccess;
  return dispatch(type, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    unsigned blocks, threads;
    launch_shape(n, max_blocks, &blocks, &threads);
    scale_kernel<T><<<blocks, threads, 0, stream>>>(static_cast<T*>(dst), static_cast<const T*>(src), n,
                                                    host_scalar<T>(scalar));
    return cudaGetLastError();
  });
}

cudaError_t divide(DataType type, void* data, size_t n, uint64_t divisor, cudaStream_t stream,
                   unsigned max_blocks) {
  if (n == 0) return cudaSuccess;
  if (divisor == 0) return cudaErrorInvalidValue;
  return dispatch(type, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    unsigned blocks, threads;
    launch_shape(n, max_blocks, &blocks, &threads);
    divide_kernel<T><<<blocks, threads, 0, stream>>>(static_cast<T*>(data), n, divisor);
    return cudaGetLastError();
  });
}

cudaError_t load_reduce_kernels() {
  for (int t = 0; t < kNumDataTypes; ++t) {
    const cudaError_t e = dispatch(static_cast<DataType>(t), [](auto* tag) {
      using T = std::remove_pointer_t<decltype(tag)>;
      cudaFuncAttributes a;
      cudaError_t r = cudaFuncGetAttributes(&a, accumulate_kernel<T>);
      if (r == cudaSuccess) r = cudaFuncGetAttributes(&a, scale_kernel<T>);
      if (r == cudaSuccess) r = cudaFuncGetAttributes(&a, divide_kernel<T>);
      return r;
    });
    if (e != cudaSuccess) return e;
  }
  return cudaSuccess;
}

}  // namespace braid::cuda
