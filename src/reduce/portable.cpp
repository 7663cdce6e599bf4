// Plain C++ kernels: one element at a time, through memcpy so any alignment works.
#include <cmath>
#include <cstring>
#include <type_traits>

#include "reduce/float_codecs.h"
#include "reduce/kernel.h"

namespace braid::reduce {
namespace {

// A stored element type and the precision it combines in.
template <class StoredT, class CalcT, CalcT (*kDecode)(StoredT), StoredT (*kEncode)(CalcT)>
struct FloatCodec {
  using Stored = StoredT;
  using Calc = CalcT;
  static Calc load(const unsigned char* p) {
    Stored v;
    std::memcpy(&v, p, sizeof(Stored));
    return kDecode(v);
  }
  static void store(unsigned char* p, Calc c) {
    const Stored v = kEncode(c);
    std::memcpy(p, &v, sizeof(Stored));
  }
};

template <class T> T identity(T v) { return v; }
using F32Codec = FloatCodec<float, float, identity<float>, identity<float>>;
using F64Codec = FloatCodec<double, double, identity<double>, identity<double>>;
using Bf16Codec = FloatCodec<uint16_t, float, bf16_to_float, float_to_bf16>;
using Fp16Codec = FloatCodec<uint16_t, float, fp16_to_float, float_to_fp16>;
using E4m3Codec = FloatCodec<uint8_t, float, e4m3_to_float, float_to_e4m3>;
using E5m2Codec = FloatCodec<uint8_t, float, e5m2_to_float, float_to_e5m2>;

// Zeros compare equal but differ in sign: min takes the negative one, max the positive one.
template <class F> F zero_aware(F a, F b, bool want_min) {
  if constexpr (sizeof(F) == 4) {
    const uint32_t r = want_min ? (float_bits(a) | float_bits(b)) : (float_bits(a) & float_bits(b));
    return bits_float(r);
  } else {
    uint64_t ua, ub;
    std::memcpy(&ua, &a, 8);
    std::memcpy(&ub, &b, 8);
    const uint64_t r = want_min ? (ua | ub) : (ua & ub);
    F out;
    std::memcpy(&out, &r, 8);
    return out;
  }
}

template <Kernel K, class F> F combine_float(F a, F b, F s) {
  if constexpr (K == Kernel::Sum) return a + b;
  if constexpr (K == Kernel::Prod) return a * b;
  if constexpr (K == Kernel::Min || K == Kernel::Max) {
    if (std::isnan(a) || std::isnan(b)) return a + b;  // NaN propagates
    if (a == b) return zero_aware(a, b, K == Kernel::Min);
    if constexpr (K == Kernel::Min) return a < b ? a : b;
    else return a > b ? a : b;
  }
  if constexpr (K == Kernel::PreMulBoth) return s * a + s * b;
  if constexpr (K == Kernel::PreMulDst) return s * a + b;
  if constexpr (K == Kernel::PreMulSrc) return a + s * b;
  if constexpr (K == Kernel::Scale) return s * b;
}

template <Kernel K, class Codec> void float_loop(const KernelArgs& a) {
  auto* dst = static_cast<unsigned char*>(a.dst);
  const auto* src = static_cast<const unsigned char*>(a.src);
  const auto s = static_cast<typename Codec::Calc>(a.float_scalar);
  constexpr size_t kSize = sizeof(typename Codec::Stored);
  for (size_t i = 0; i < a.n; ++i) {
    const auto x = K == Kernel::Scale ? typename Codec::Calc{} : Codec::load(dst + i * kSize);
    Codec::store(dst + i * kSize, combine_float<K>(x, Codec::load(src + i * kSize), s));
  }
}

// Integers: arithmetic in the unsigned type so overflow wraps; min/max in the signed type.
template <Kernel K, class T> T combine_int(T a, T b, T s) {
  using U = std::make_unsigned_t<T>;
  const U ua = static_cast<U>(a), ub = static_cast<U>(b), us = static_cast<U>(s);
  if constexpr (K == Kernel::Sum) return static_cast<T>(U(ua + ub));
  if constexpr (K == Kernel::Prod) return static_cast<T>(U(ua * ub));
  if constexpr (K == Kernel::Min) return a < b ? a : b;
  if constexpr (K == Kernel::Max) return a > b ? a : b;
  if constexpr (K == Kernel::PreMulBoth) return static_cast<T>(U(U(us * ua) + U(us * ub)));
  if constexpr (K == Kernel::PreMulDst) return static_cast<T>(U(U(us * ua) + ub));
  if constexpr (K == Kernel::PreMulSrc) return static_cast<T>(U(ua + U(us * ub)));
  if constexpr (K == Kernel::Scale) return static_cast<T>(U(us * ub));
}

template <Kernel K, class T> void int_loop(const KernelArgs& a) {
  auto* dst = static_cast<unsigned char*>(a.dst);
  const auto* src = static_cast<const unsigned char*>(a.src);
  const T s = static_cast<T>(a.int_scalar);
  for (size_t i = 0; i < a.n; ++i) {
    T x{}, y;
    if (K != Kernel::Scale) std::memcpy(&x, dst + i * sizeof(T), sizeof(T));
    std::memcpy(&y, src + i * sizeof(T), sizeof(T));
    const T r = combine_int<K>(x, y, s);
    std::memcpy(dst + i * sizeof(T), &r, sizeof(T));
  }
}

template <Kernel K> void run_kernel(DataType type, const KernelArgs& a) {
  switch (type) {
    case DataType::Int8: return int_loop<K, int8_t>(a);
    case DataType::Uint8: return int_loop<K, uint8_t>(a);
    case DataType::Int32: return int_loop<K, int32_t>(a);
    case DataType::Uint32: return int_loop<K, uint32_t>(a);
    case DataType::Int64: return int_loop<K, int64_t>(a);
    case DataType::Uint64: return int_loop<K, uint64_t>(a);
    case DataType::Float16: return float_loop<K, Fp16Codec>(a);
    case DataType::Float32: return float_loop<K, F32Codec>(a);
    case DataType::Float64: return float_loop<K, F64Codec>(a);
    case DataType::Bfloat16: return float_loop<K, Bf16Codec>(a);
    case DataType::Float8e4m3: return float_loop<K, E4m3Codec>(a);
    case DataType::Float8e5m2: return float_loop<K, E5m2Codec>(a);
  }
}

template <class T> void divide_loop(void* data, size_t n, uint64_t divisor) {
  auto* p = static_cast<unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) {
    T v;
    std::memcpy(&v, p + i * sizeof(T), sizeof(T));
    // Divide the magnitude in 64 bits so huge divisors and the most negative value work.
    bool negative = false;
    if constexpr (std::is_signed_v<T>) negative = v < 0;
    const uint64_t magnitude = negative ? uint64_t(0) - uint64_t(int64_t(v)) : uint64_t(v);
    const uint64_t q = magnitude / divisor;
    const T r = static_cast<T>(negative ? uint64_t(0) - q : q);
    std::memcpy(p + i * sizeof(T), &r, sizeof(T));
  }
}

}  // namespace

void run_portable(DataType type, const KernelArgs& args) {
  switch (args.kernel) {
    case Kernel::Sum: return run_kernel<Kernel::Sum>(type, args);
    case Kernel::Prod: return run_kernel<Kernel::Prod>(type, args);
    case Kernel::Min: return run_kernel<Kernel::Min>(type, args);
    case Kernel::Max: return run_kernel<Kernel::Max>(type, args);
    case Kernel::PreMulBoth: return run_kernel<Kernel::PreMulBoth>(type, args);
    case Kernel::PreMulDst: return run_kernel<Kernel::PreMulDst>(type, args);
    case Kernel::PreMulSrc: return run_kernel<Kernel::PreMulSrc>(type, args);
    case Kernel::Scale: return run_kernel<Kernel::Scale>(type, args);
  }
}

void divide_integers_portable(DataType type, void* data, size_t n, uint64_t divisor) {
  switch (type) {
    case DataType::Int8: return divide_loop<int8_t>(data, n, divisor);
    case DataType::Uint8: return divide_loop<uint8_t>(data, n, divisor);
    case DataType::Int32: return divide_loop<int32_t>(data, n, divisor);
    case DataType::Uint32: return divide_loop<uint32_t>(data, n, divisor);
    case DataType::Int64: return divide_loop<int64_t>(data, n, divisor);
    case DataType::Uint64: return divide_loop<uint64_t>(data, n, divisor);
    default: return;
  }
}

}  // namespace braid::reduce
