// Device-side arithmetic shared by braid's reduction kernels (device_reduce.cu, peer_reduce.cu),
// with the host kernels' semantics (src/reduce/reduce.h): small floats widen to fp32 and round
// once, integers wrap, Min/Max are symmetric in -0/+0 and NaN. Included by .cu files only.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "common/types.h"
#include "cuda/device_reduce.h"

namespace braid::cuda::arith {

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

// Calls f with a null pointer of the storage type of `type`.
template <typename F>
inline cudaError_t dispatch(DataType type, F&& f) {
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

// Decodes a scalar's bytes (stored as the element type) into the compute type, on the host.
template <typename T>
typename Arith<T>::Compute host_scalar(const DeviceScalar& s) {
  T v;
  std::memcpy(&v, s.bytes, sizeof(T));
  if constexpr (std::is_same_v<T, __half>) return __half2float(v);
  else if constexpr (std::is_same_v<T, __nv_bfloat16>) return __bfloat162float(v);
  else if constexpr (std::is_same_v<T, __nv_fp8_e4m3> || std::is_same_v<T, __nv_fp8_e5m2>) return static_cast<float>(v);
  else return v;
}

}  // namespace braid::cuda::arith
