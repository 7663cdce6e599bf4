#include "cuda/device_reduce.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

namespace braid::cuda {

namespace {

// How each storage type is computed: small floats widen to fp32 and round once on the way back.
template <typename T>
struct Arith {
  using Compute = T;
  __device__ static Compute load(T v) { return v; }
  __device__ static T store(Compute v) { return v; }
};
template <>
struct Arith<__half> {
  using Compute = float;
  __device__ static float load(__half v) { return __half2float(v); }
  __device__ static __half store(float v) { return __float2half_rn(v); }
};
template <>
struct Arith<__nv_bfloat16> {
  using Compute = float;
  __device__ static float load(__nv_bfloat16 v) { return __bfloat162float(v); }
  __device__ static __nv_bfloat16 store(float v) { return __float2bfloat16_rn(v); }
};
template <>
struct Arith<__nv_fp8_e4m3> {
  using Compute = float;
  __device__ static float load(__nv_fp8_e4m3 v) { return static_cast<float>(v); }
  // The constructor rounds to nearest even and saturates finite overflow (__NV_SATFINITE).
  __device__ static __nv_fp8_e4m3 store(float v) { return __nv_fp8_e4m3(v); }
};
template <>
struct Arith<__nv_fp8_e5m2> {
  using Compute = float;
  __device__ static float load(__nv_fp8_e5m2 v) { return static_cast<float>(v); }
  __device__ static __nv_fp8_e5m2 store(float v) { return __nv_fp8_e5m2(v); }
};

// Min/Max as the host kernels (src/reduce/reduce.h): NaN propagates and min(-0, +0) = -0,
// max(-0, +0) = +0, so combine(a, b) == combine(b, a) bit for bit. Ranks that start a
// fixed-order chain from different ends then still agree.
template <typename C>
__device__ C float_min(C a, C b) {
  if (a != a || b != b) return a + b;
  if (a == b) return signbit(a) ? a : b;
  return a < b ? a : b;
}
template <typename C>
__device__ C float_max(C a, C b) {
  if (a != a || b != b) return a + b;
  if (a == b) return signbit(a) ? b : a;
  return a > b ? a : b;
}

template <typename C>
__device__ C combine(RedOp op, C a, C b) {
  switch (op) {
    case RedOp::Prod: return a * b;
    case RedOp::Max:
      if constexpr (std::is_floating_point_v<C>) return float_max(a, b);
      else return a > b ? a : b;
    case RedOp::Min:
      if constexpr (std::is_floating_point_v<C>) return float_min(a, b);
      else return a < b ? a : b;
    default: return a + b;  // Sum, PreMulSum (Avg is rewritten before it gets here)
  }
}

// Integer products and sums wrap like two's complement: compute in the unsigned twin.
template <typename C>
__device__ C wrap_combine(RedOp op, C a, C b) {
  if constexpr (std::is_integral_v<C> && std::is_signed_v<C>) {
    using U = std::make_unsigned_t<C>;
    if (op == RedOp::Sum || op == RedOp::PreMulSum) return static_cast<C>(static_cast<U>(a) + static_cast<U>(b));
    if (op == RedOp::Prod) return static_cast<C>(static_cast<U>(a) * static_cast<U>(b));
  }
  return combine(op, a, b);
}

template <typename C>
__device__ C wrap_mul(C a, C b) {
  if constexpr (std::is_integral_v<C> && std::is_signed_v<C>) {
    using U = std::make_unsigned_t<C>;
    return static_cast<C>(static_cast<U>(a) * static_cast<U>(b));
  } else {
    return a * b;
  }
}

template <typename T>
__global__ void accumulate_kernel(RedOp op, T* dst, const T* src, size_t n, typename Arith<T>::Compute s,
                                  bool scale_dst, bool scale_src) {
  using A = Arith<T>;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    auto a = A::load(dst[i]);
    auto b = A::load(src[i]);
    if (scale_dst) a = wrap_mul(a, s);
    if (scale_src) b = wrap_mul(b, s);
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

// Decodes the scalar's bytes (stored as the element type) into the compute type, on the host.
template <typename T>
typename Arith<T>::Compute host_scalar(const DeviceScalar& s) {
  T v;
  std::memcpy(&v, s.bytes, sizeof(T));
  if constexpr (std::is_same_v<T, __half>) return __half2float(v);
  else if constexpr (std::is_same_v<T, __nv_bfloat16>) return __bfloat162float(v);
  else if constexpr (std::is_same_v<T, __nv_fp8_e4m3> || std::is_same_v<T, __nv_fp8_e5m2>) return static_cast<float>(v);
  else return v;
}

void launch_shape(size_t n, unsigned max_blocks, unsigned* blocks, unsigned* threads) {
  *threads = 256;
  const size_t cap = std::max(1u, max_blocks);
  const size_t want = std::max<size_t>(1, (n + *threads - 1) / *threads);
  *blocks = static_cast<unsigned>(std::min(want, cap));
}

// Calls f with a null pointer of the storage type of `type`.
template <typename F>
cudaError_t dispatch(DataType type, F&& f) {
  switch (type) {
    case DataType::Int8: return f(static_cast<int8_t*>(nullptr));
    case DataType::Uint8: return f(static_cast<uint8_t*>(nullptr));
    case DataType::Int32: return f(static_cast<int32_t*>(nullptr));
    case DataType::Uint32: return f(static_cast<uint32_t*>(nullptr));
    case DataType::Int64: return f(static_cast<int64_t*>(nullptr));
    case DataType::Uint64: return f(static_cast<uint64_t*>(nullptr));
    case DataType::Float16: return f(static_cast<__half*>(nullptr));
    case DataType::Float32: return f(static_cast<float*>(nullptr));
    case DataType::Float64: return f(static_cast<double*>(nullptr));
    case DataType::Bfloat16: return f(static_cast<__nv_bfloat16*>(nullptr));
    case DataType::Float8e4m3: return f(static_cast<__nv_fp8_e4m3*>(nullptr));
    case DataType::Float8e5m2: return f(static_cast<__nv_fp8_e5m2*>(nullptr));
  }
  return cudaErrorInvalidValue;
}

}  // namespace

cudaError_t accumulate(DataType type, RedOp op, void* dst, const void* src, size_t n,
                       const DeviceScalar& scalar, bool scale_dst, bool scale_src, cudaStream_t stream,
                       unsigned max_blocks) {
  if (n == 0) return cudaSuccess;
  return dispatch(type, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    unsigned blocks, threads;
    launch_shape(n, max_blocks, &blocks, &threads);
    const auto s = (scale_dst || scale_src) ? host_scalar<T>(scalar) : typename Arith<T>::Compute{};
    accumulate_kernel<T><<<blocks, threads, 0, stream>>>(op, static_cast<T*>(dst), static_cast<const T*>(src), n, s,
                                                         scale_dst, scale_src);
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

}  // namespace braid::cuda
