// Host reduction kernels against an independent scalar reference, on every SIMD target the CPU
// has. The reference converts narrow floats with frexp/ldexp/nearbyint arithmetic (not the bit
// tricks the library uses) and is itself checked against known encodings.
#include <gtest/gtest.h>

#include <cfenv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "common/settings.h"
#include "reduce/reduce.h"

namespace braid::reduce {
namespace {

// ------------------------------------------------------------------ reference conversions

struct Format {
  int exp_bits, man_bits, bias;
  bool ieee;       // all-ones exponent = inf/NaN; otherwise (e4m3 FN) only S.1111.111 is NaN
  bool saturate;   // overflow -> largest finite (fp8 SATFINITE), else -> infinity
  double max_finite;
};
constexpr Format kFp16{5, 10, 15, true, false, 65504.0};
constexpr Format kBf16{8, 7, 127, true, false, 0x1.FEp127};
constexpr Format kE4m3{4, 3, 7, false, true, 448.0};
constexpr Format kE5m2{5, 2, 15, true, true, 57344.0};

double ref_decode(const Format& f, uint32_t code) {
  const int bits = 1 + f.exp_bits + f.man_bits;
  const bool negative = (code >> (bits - 1)) & 1;
  const uint32_t exp_field = (code >> f.man_bits) & ((1u << f.exp_bits) - 1);
  const uint32_t man = code & ((1u << f.man_bits) - 1);
  const uint32_t exp_max = (1u << f.exp_bits) - 1;
  double v;
  if (f.ieee && exp_field == exp_max) {
    v = man == 0 ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
  } else if (!f.ieee && exp_field == exp_max && man == (1u << f.man_bits) - 1) {
    v = std::numeric_limits<double>::quiet_NaN();
  } else if (exp_field == 0) {
    v = std::ldexp(double(man), 1 - f.bias - f.man_bits);
  } else {
    v = std::ldexp(double(man + (1u << f.man_bits)), int(exp_field) - f.bias - f.man_bits);
  }
  return negative ? -v : v;
}

uint32_t ref_nan_code(const Format& f) {
  const int bits = 1 + f.exp_bits + f.man_bits;
  return ((1u << (bits - 1)) - 1);  // all ones below the sign: a NaN in all four formats
}

uint32_t ref_encode(const Format& f, double x) {
  const int bits = 1 + f.exp_bits + f.man_bits;
  if (std::isnan(x)) return ref_nan_code(f);
  const uint32_t sign = std::signbit(x) ? 1u << (bits - 1) : 0u;
  const double a = std::fabs(x);
  const uint32_t max_code = f.ieee ? ((((1u << f.exp_bits) - 2) << f.man_bits) | ((1u << f.man_bits) - 1))
                                   : ((1u << (bits - 1)) - 2);
  const uint32_t inf_code = ((1u << f.exp_bits) - 1) << f.man_bits;
  if (a == 0) return sign;
  int e;
  std::frexp(a, &e);
  const int emin = 1 - f.bias;
  const int ex = std::max(e - 1, emin);
  const double quantum = std::ldexp(1.0, ex - f.man_bits);
  const double r = std::nearbyint(a / quantum);  // default rounding: to nearest even
  const double v = r * quantum;
  if (std::isinf(a) || v > f.max_finite) return sign | (f.saturate ? max_code : inf_code);
  if (v < std::ldexp(1.0, emin)) return sign | uint32_t(r);  // subnormal: count of quanta
  int ev;
  std::frexp(v, &ev);
  const uint32_t mant = uint32_t(std::ldexp(v, f.man_bits - (ev - 1))) - (1u << f.man_bits);
  return sign | (uint32_t(ev - 1 + f.bias) << f.man_bits) | mant;
}

TEST(ReduceReference, ConversionsMatchKnownEncodings) {
  EXPECT_EQ(ref_decode(kE4m3, 0x7E), 448.0);
  EXPECT_TRUE(std::isnan(ref_decode(kE4m3, 0x7F)));
  EXPECT_TRUE(std::isnan(ref_decode(kE4m3, 0xFF)));
  EXPECT_EQ(ref_decode(kE4m3, 0x78), 256.0);
  EXPECT_EQ(ref_decode(kE4m3, 0x38), 1.0);
  EXPECT_EQ(ref_decode(kE4m3, 0x01), 0x1p-9);
  EXPECT_EQ(ref_decode(kE4m3, 0x08), 0x1p-6);
  EXPECT_EQ(ref_decode(kE4m3, 0xFE), -448.0);
  EXPECT_EQ(ref_decode(kE5m2, 0x7B), 57344.0);
  EXPECT_EQ(ref_decode(kE5m2, 0x7C), std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(ref_decode(kE5m2, 0x7E)));
  EXPECT_EQ(ref_decode(kE5m2, 0x3C), 1.0);
  EXPECT_EQ(ref_decode(kE5m2, 0x01), 0x1p-16);
  EXPECT_EQ(ref_decode(kFp16, 0x3C00), 1.0);
  EXPECT_EQ(ref_decode(kFp16, 0x7BFF), 65504.0);
  EXPECT_EQ(ref_decode(kFp16, 0x0001), 0x1p-24);
  EXPECT_EQ(ref_decode(kFp16, 0xC000), -2.0);
  EXPECT_EQ(ref_decode(kBf16, 0x3F80), 1.0);
  EXPECT_EQ(ref_decode(kBf16, 0x4049), 3.140625);
  EXPECT_EQ(ref_decode(kBf16, 0x0001), 0x1p-133);
  // Round to nearest, ties to even; overflow per format.
  EXPECT_EQ(ref_encode(kE4m3, 1000.0), 0x7Eu);
  EXPECT_EQ(ref_encode(kE4m3, -std::numeric_limits<double>::infinity()), 0xFEu);
  EXPECT_EQ(ref_encode(kE4m3, 464.0), 0x7Eu);  // tie between 448 and (NaN slot) 480: saturates
  EXPECT_EQ(ref_encode(kE4m3, 1.0625), 0x38u);  // tie 1 / 1.125 -> even (1)
  EXPECT_EQ(ref_encode(kE4m3, 1.1875), 0x3Au);  // tie 1.125 / 1.25 -> even (1.25)
  EXPECT_EQ(ref_encode(kE4m3, 0x1p-10), 0x00u);  // half the smallest subnormal: tie to 0
  EXPECT_EQ(ref_encode(kE4m3, 0x1.8p-9), 0x02u);  // 1.5 quanta -> 2
  EXPECT_EQ(ref_encode(kE5m2, 1e9), 0x7Bu);
  EXPECT_EQ(ref_encode(kFp16, 65520.0), 0x7C00u);  // rounds up past the largest finite: inf
  EXPECT_EQ(ref_encode(kFp16, 65519.0), 0x7BFFu);
  EXPECT_EQ(ref_encode(kFp16, 1.0 + 0x1p-11), 0x3C00u);
  EXPECT_EQ(ref_encode(kFp16, 1.0 + 0x1.8p-10 + 0x1p-11), 0x3C02u);
  EXPECT_EQ(ref_encode(kBf16, 1.0 + 0x1p-8), 0x3F80u);
  EXPECT_EQ(ref_encode(kBf16, 1.0 + 0x1p-8 + 0x1p-20), 0x3F81u);
  EXPECT_EQ(ref_encode(kBf16, -0.0), 0x8000u);
  // Every code decodes and encodes back to itself (NaNs aside).
  for (const Format* f : {&kFp16, &kBf16, &kE4m3, &kE5m2}) {
    const uint32_t count = 1u << (1 + f->exp_bits + f->man_bits);
    for (uint32_t c = 0; c < count; ++c) {
      const double v = ref_decode(*f, c);
      if (std::isnan(v)) continue;
      if (std::isinf(v) && f->saturate) continue;
      ASSERT_EQ(ref_encode(*f, v), c) << "code " << c;
    }
  }
}

// ------------------------------------------------------------------ reference kernels

enum class Variant { Sum, Prod, Min, Max, PreMulBoth, PreMulDst, PreMulSrc, Scale };
constexpr Variant kVariants[] = {Variant::Sum,        Variant::Prod,      Variant::Min,
                                 Variant::Max,        Variant::PreMulBoth, Variant::PreMulDst,
                                 Variant::PreMulSrc,  Variant::Scale};
const char* variant_name(Variant v) {
  const char* names[] = {"sum", "prod", "min", "max", "premul_both", "premul_dst", "premul_src", "scale"};
  return names[static_cast<int>(v)];
}

template <class F> F ref_combine_float(Variant v, F a, F b, F s) {
  switch (v) {
    case Variant::Sum: return a + b;
    case Variant::Prod: return a * b;
    case Variant::Min:
    case Variant::Max: {
      if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<F>::quiet_NaN();
      if (a == 0 && b == 0) {
        const bool negative = v == Variant::Min ? (std::signbit(a) || std::signbit(b))
                                                : (std::signbit(a) && std::signbit(b));
        return negative ? F(-0.0) : F(0.0);
      }
      return v == Variant::Min ? std::min(a, b) : std::max(a, b);
    }
    case Variant::PreMulBoth: { const F x = s * a; const F y = s * b; return x + y; }
    case Variant::PreMulDst: { const F x = s * a; return x + b; }
    case Variant::PreMulSrc: { const F y = s * b; return a + y; }
    case Variant::Scale: return s * b;
  }
  return 0;
}

template <class T> T ref_combine_int(Variant v, T a, T b, T s) {
  // Wrapping arithmetic through 64-bit unsigned, truncated at the end.
  const uint64_t ua = uint64_t(a), ub = uint64_t(b), us = uint64_t(s);
  switch (v) {
    case Variant::Sum: return T(ua + ub);
    case Variant::Prod: return T(ua * ub);
    case Variant::Min: return a < b ? a : b;
    case Variant::Max: return a > b ? a : b;
    case Variant::PreMulBoth: return T(us * ua + us * ub);
    case Variant::PreMulDst: return T(us * ua + ub);
    case Variant::PreMulSrc: return T(ua + us * ub);
    case Variant::Scale: return T(us * ub);
  }
  return 0;
}

const Format* narrow_format(DataType t) {
  switch (t) {
    case DataType::Float16: return &kFp16;
    case DataType::Bfloat16: return &kBf16;
    case DataType::Float8e4m3: return &kE4m3;
    case DataType::Float8e5m2: return &kE5m2;
    default: return nullptr;
  }
}

uint64_t load_raw(const unsigned char* p, size_t size) {
  uint64_t v = 0;
  std::memcpy(&v, p, size);
  return v;
}
void store_raw(unsigned char* p, size_t size, uint64_t v) { std::memcpy(p, &v, size); }

template <class T> T load_as(const unsigned char* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

// Decoded narrow values, one table per format (reference decoder).
const std::vector<float>& decode_table(const Format& f) {
  static std::vector<float> tables[4];
  const int index = &f == &kFp16 ? 0 : &f == &kBf16 ? 1 : &f == &kE4m3 ? 2 : 3;
  std::vector<float>& t = tables[index];
  if (t.empty()) {
    const uint32_t count = 1u << (1 + f.exp_bits + f.man_bits);
    t.resize(count);
    for (uint32_t c = 0; c < count; ++c) t[c] = static_cast<float>(ref_decode(f, c));
  }
  return t;
}

// Computes the expected dst in place.
void reference(DataType type, Variant v, unsigned char* dst, const unsigned char* src, size_t n,
               const OpScalar& s) {
  const size_t size = datatype_size(type);
  for (size_t i = 0; i < n; ++i) {
    unsigned char* d = dst + i * size;
    const unsigned char* x = src + i * size;
    switch (type) {
      case DataType::Float32: {
        const float r = ref_combine_float<float>(v, load_as<float>(d), load_as<float>(x), float(s.as_double()));
        std::memcpy(d, &r, 4);
        break;
      }
      case DataType::Float64: {
        const double r = ref_combine_float<double>(v, load_as<double>(d), load_as<double>(x), s.as_double());
        std::memcpy(d, &r, 8);
        break;
      }
      case DataType::Float16: case DataType::Bfloat16: case DataType::Float8e4m3:
      case DataType::Float8e5m2: {
        const Format& f = *narrow_format(type);
        const auto& table = decode_table(f);
        const float sf = table[load_raw(s.bytes, size)];
        const float r = ref_combine_float<float>(v, table[load_raw(d, size)], table[load_raw(x, size)], sf);
        store_raw(d, size, ref_encode(f, r));
        break;
      }
#define BRAID_INT_CASE(DT, T)                                                                    \
  case DataType::DT: {                                                                          \
    const T r = ref_combine_int<T>(v, load_as<T>(d), load_as<T>(x), load_as<T>(s.bytes));      \
    std::memcpy(d, &r, sizeof(T));                                                              \
    break;                                                                                      \
  }
      BRAID_INT_CASE(Int8, int8_t)
      BRAID_INT_CASE(Uint8, uint8_t)
      BRAID_INT_CASE(Int32, int32_t)
      BRAID_INT_CASE(Uint32, uint32_t)
      BRAID_INT_CASE(Int64, int64_t)
      BRAID_INT_CASE(Uint64, uint64_t)
#undef BRAID_INT_CASE
    }
  }
}

bool is_nan_element(DataType type, const unsigned char* p) {
  switch (type) {
    case DataType::Float32: return std::isnan(load_as<float>(p));
    case DataType::Float64: return std::isnan(load_as<double>(p));
    default: {
      const Format* f = narrow_format(type);
      return f != nullptr && std::isnan(ref_decode(*f, uint32_t(load_raw(p, datatype_size(type)))));
    }
  }
}

// Index of the first element that differs (NaN matches any NaN), or n.
size_t first_mismatch(DataType type, const unsigned char* got, const unsigned char* want, size_t n) {
  const size_t size = datatype_size(type);
  for (size_t i = 0; i < n; ++i) {
    if (std::memcmp(got + i * size, want + i * size, size) == 0) continue;
    if (is_nan_element(type, got + i * size) && is_nan_element(type, want + i * size)) continue;
    return i;
  }
  return n;
}

// ------------------------------------------------------------------ inputs

void fill(DataType type, unsigned char* p, size_t n, std::mt19937_64& rng, bool wild) {
  const size_t size = datatype_size(type);
  std::uniform_real_distribution<double> tame(-3.0, 3.0);
  for (size_t i = 0; i < n; ++i) {
    uint64_t bits = rng();
    if (datatype_is_float(type) && !wild) {
      double x = tame(rng);
      if (i % 37 == 5) x = 0.0;
      if (i % 41 == 7) x = -0.0;
      if (i % 97 == 3) x = std::numeric_limits<double>::quiet_NaN();
      if (i % 89 == 4) x = 1e-30;  // subnormal or zero in the narrow formats
      if (i % 83 == 6) x = -1e30;  // overflow in the narrow formats
      if (type == DataType::Float64) std::memcpy(&bits, &x, 8);
      else if (type == DataType::Float32) { const float f = float(x); std::memcpy(&bits, &f, 4); }
      else bits = ref_encode(*narrow_format(type), float(x));
    }
    store_raw(p + i * size, size, bits);
  }
}

OpScalar scalar_for(DataType type, std::mt19937_64& rng) {
  if (!datatype_is_float(type)) return OpScalar::of(type, double(int64_t(rng() % 7) - 3));
  const double choices[] = {0.5, 0.3, -1.75, 3.0, 1.0 / 3.0, 1e-3};
  return OpScalar::of(type, choices[rng() % 6]);
}

Result run_variant(DataType type, Variant v, void* dst, const void* src, size_t n, const OpScalar& s) {
  switch (v) {
    case Variant::Sum: return accumulate(type, RedOp::Sum, dst, src, n);
    case Variant::Prod: return accumulate(type, RedOp::Prod, dst, src, n);
    case Variant::Min: return accumulate(type, RedOp::Min, dst, src, n);
    case Variant::Max: return accumulate(type, RedOp::Max, dst, src, n);
    case Variant::PreMulBoth: return accumulate(type, RedOp::PreMulSum, dst, src, n, &s, &s);
    case Variant::PreMulDst: return accumulate(type, RedOp::PreMulSum, dst, src, n, &s, nullptr);
    case Variant::PreMulSrc: return accumulate(type, RedOp::PreMulSum, dst, src, n, nullptr, &s);
    case Variant::Scale: return scale(type, dst, src, n, s);
  }
  return Result::InternalError;
}

// Runs one case at byte offsets (dst_off, src_off) from 64-byte aligned buffers and compares,
// also checking that the bytes around dst are untouched.
void check_case(DataType type, Variant v, size_t n, size_t dst_off, size_t src_off,
                std::mt19937_64& rng, bool wild) {
  const size_t size = datatype_size(type);
  const size_t guard = 16;
  std::vector<unsigned char> dst_buf(n * size + 2 * guard + 128), src_buf(n * size + 128);
  unsigned char* d = dst_buf.data() + ((64 - uintptr_t(dst_buf.data()) % 64) % 64) + dst_off;
  unsigned char* x = src_buf.data() + ((64 - uintptr_t(src_buf.data()) % 64) % 64) + src_off;
  for (size_t i = 0; i < n * size + 2 * guard; ++i) d[i] = static_cast<unsigned char>(rng());
  unsigned char* data = d + guard;
  fill(type, data, n, rng, wild);
  fill(type, x, n, rng, wild);
  const OpScalar s = scalar_for(type, rng);

  std::vector<unsigned char> want(d, d + n * size + 2 * guard);
  reference(type, v, want.data() + guard, x, n, s);
  ASSERT_EQ(run_variant(type, v, data, x, n, s), Result::Success);
  const size_t bad = first_mismatch(type, data, want.data() + guard, n);
  ASSERT_EQ(bad, n) << datatype_name(type) << " " << variant_name(v) << " n=" << n << " offsets "
                    << dst_off << "/" << src_off << " wild=" << wild << " target " << simd_target()
                    << " element " << bad << " scalar " << s.as_double();
  ASSERT_EQ(std::memcmp(d, want.data(), guard), 0) << "wrote before dst";
  ASSERT_EQ(std::memcmp(data + n * size, want.data() + guard + n * size, guard), 0) << "wrote past dst";
}

class ReduceTargets : public ::testing::Test {
 protected:
  void TearDown() override { EXPECT_EQ(force_simd_target(""), Result::Success); }
};

TEST_F(ReduceTargets, EveryTypeOpSizeAndOffsetOnEveryTarget) {
  const auto targets = simd_targets_available();
  ASSERT_FALSE(targets.empty());
  std::mt19937_64 rng(12345);
  for (std::string_view target : targets) {
    ASSERT_EQ(force_simd_target(target), Result::Success);
    ASSERT_EQ(std::string_view(simd_target()), target);
    for (DataType type : all_datatypes()) {
      for (Variant v : kVariants) {
        for (size_t n : {size_t(0), size_t(1), size_t(7), size_t(63), size_t(64), size_t(65), size_t(203)}) {
          // Every offset 0..7 on each pointer, paired with a varied offset on the other.
          for (size_t off = 0; off < 8; ++off) {
            check_case(type, v, n, off, (off * 3 + 1) % 8, rng, off % 2 == 1);
            check_case(type, v, n, (off * 5 + 2) % 8, off, rng, off % 2 == 0);
            if (HasFatalFailure()) return;
          }
        }
      }
    }
  }
}

TEST_F(ReduceTargets, MillionElementCases) {
  std::mt19937_64 rng(777);
  const size_t n = 1000003;
  for (DataType type : all_datatypes()) {
    check_case(type, Variant::Sum, n, 3, 5, rng, false);
    if (HasFatalFailure()) return;
  }
  check_case(DataType::Bfloat16, Variant::PreMulBoth, n, 1, 0, rng, false);
  check_case(DataType::Float16, Variant::Max, n, 0, 1, rng, true);
  check_case(DataType::Float8e4m3, Variant::Prod, n, 7, 2, rng, true);
}

// ------------------------------------------------------------------ semantics spelled out

TEST(Reduce, MinMaxPropagateNaNAndOrderZeros) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  float dst[6] = {nan, 1.0f, -0.0f, 0.0f, 2.0f, -5.0f};
  const float src[6] = {1.0f, nan, 0.0f, -0.0f, 2.0f, 3.0f};
  float lo[6], hi[6];
  std::memcpy(lo, dst, sizeof dst);
  std::memcpy(hi, dst, sizeof dst);
  ASSERT_EQ(accumulate(DataType::Float32, RedOp::Min, lo, src, 6), Result::Success);
  ASSERT_EQ(accumulate(DataType::Float32, RedOp::Max, hi, src, 6), Result::Success);
  EXPECT_TRUE(std::isnan(lo[0]) && std::isnan(lo[1]) && std::isnan(hi[0]) && std::isnan(hi[1]));
  EXPECT_TRUE(lo[2] == 0 && std::signbit(lo[2]) && lo[3] == 0 && std::signbit(lo[3]));
  EXPECT_TRUE(hi[2] == 0 && !std::signbit(hi[2]) && hi[3] == 0 && !std::signbit(hi[3]));
  EXPECT_EQ(lo[4], 2.0f);
  EXPECT_EQ(lo[5], -5.0f);
  EXPECT_EQ(hi[5], 3.0f);
}

TEST(Reduce, NarrowFloatsSaturateOrOverflowAsDocumented) {
  // fp8: 300 + 300 saturates to 448 (e4m3); inf input saturates too; NaN stays NaN.
  uint8_t e4[3] = {0x7D, 0x7C, 0x7F};      // 416, 384, NaN
  const uint8_t e4s[3] = {0x7D, 0x00, 0x38};  // 416, 0, 1
  ASSERT_EQ(accumulate(DataType::Float8e4m3, RedOp::Sum, e4, e4s, 3), Result::Success);
  EXPECT_EQ(e4[0], 0x7E);
  EXPECT_EQ(e4[1], 0x7C);
  EXPECT_EQ(e4[2] & 0x7F, 0x7F);
  uint8_t e5[2] = {0x7C, 0x7B};  // +inf, 57344
  const uint8_t e5s[2] = {0x3C, 0x7B};
  ASSERT_EQ(accumulate(DataType::Float8e5m2, RedOp::Sum, e5, e5s, 2), Result::Success);
  EXPECT_EQ(e5[0], 0x7B);
  EXPECT_EQ(e5[1], 0x7B);
  // fp16: 65504 + 65504 overflows to +inf.
  uint16_t h[1] = {0x7BFF};
  const uint16_t hs[1] = {0x7BFF};
  ASSERT_EQ(accumulate(DataType::Float16, RedOp::Sum, h, hs, 1), Result::Success);
  EXPECT_EQ(h[0], 0x7C00);
}

TEST(Reduce, RoundsOncePerCall) {
  // Find bf16 inputs where rounding the products s*d and s*x to bf16 before adding would give a
  // different answer from one rounding of the fp32 result; the kernel must give the latter.
  const OpScalar s = OpScalar::of(DataType::Bfloat16, 0.3);
  const float sf = float(ref_decode(kBf16, load_raw(s.bytes, 2)));
  auto bf = [](float v) { return float(ref_decode(kBf16, ref_encode(kBf16, v))); };
  int found = 0;
  for (uint32_t a = 0x3F80; a < 0x3FA0 && found < 8; ++a) {
    for (uint32_t b = 0x3C00; b < 0x3C40 && found < 8; ++b) {
      const float fa = float(ref_decode(kBf16, a)), fb = float(ref_decode(kBf16, b));
      const uint32_t once = ref_encode(kBf16, sf * fa + sf * fb);
      const uint32_t twice = ref_encode(kBf16, bf(sf * fa) + bf(sf * fb));
      if (once == twice) continue;
      ++found;
      uint16_t dst[1] = {uint16_t(a)};
      const uint16_t src[1] = {uint16_t(b)};
      ASSERT_EQ(accumulate(DataType::Bfloat16, RedOp::PreMulSum, dst, src, 1, &s, &s),
                Result::Success);
      EXPECT_EQ(dst[0], once);
    }
  }
  EXPECT_GT(found, 0);
}

TEST(Reduce, IntegersWrap) {
  int8_t a[3] = {127, -128, 100};
  const int8_t b[3] = {1, -1, 3};
  ASSERT_EQ(accumulate(DataType::Int8, RedOp::Sum, a, b, 3), Result::Success);
  EXPECT_EQ(a[0], -128);
  EXPECT_EQ(a[1], 127);
  ASSERT_EQ(accumulate(DataType::Int8, RedOp::Prod, a, b, 3), Result::Success);
  EXPECT_EQ(a[2], int8_t(uint8_t(103 * 3)));
  uint64_t u[1] = {~0ull};
  const uint64_t one[1] = {2};
  ASSERT_EQ(accumulate(DataType::Uint64, RedOp::Sum, u, one, 1), Result::Success);
  EXPECT_EQ(u[0], 1u);
}

TEST(Reduce, DivideIntegersTruncatesTowardZero) {
  int32_t v[5] = {7, -7, std::numeric_limits<int32_t>::min(), -1, 6};
  ASSERT_EQ(divide(DataType::Int32, v, 5, 2), Result::Success);
  EXPECT_EQ(v[0], 3);
  EXPECT_EQ(v[1], -3);
  EXPECT_EQ(v[2], std::numeric_limits<int32_t>::min() / 2);
  EXPECT_EQ(v[3], 0);
  EXPECT_EQ(v[4], 3);
  int64_t w[2] = {std::numeric_limits<int64_t>::min(), -5};
  ASSERT_EQ(divide(DataType::Int64, w, 2, uint64_t(1) << 63), Result::Success);
  EXPECT_EQ(w[0], -1);
  EXPECT_EQ(w[1], 0);
  uint8_t u[2] = {255, 9};
  ASSERT_EQ(divide(DataType::Uint8, u, 2, 4), Result::Success);
  EXPECT_EQ(u[0], 63);
  EXPECT_EQ(u[1], 2);
  // Unaligned, many elements, against C division.
  std::mt19937_64 rng(5);
  std::vector<unsigned char> buf(4 * 1001 + 3);
  std::vector<int32_t> expect(1001);
  for (size_t i = 0; i < 1001; ++i) {
    const int32_t x = int32_t(uint32_t(rng()));
    std::memcpy(buf.data() + 3 + 4 * i, &x, 4);
    expect[i] = x / 7;
  }
  ASSERT_EQ(divide(DataType::Int32, buf.data() + 3, 1001, 7), Result::Success);
  for (size_t i = 0; i < 1001; ++i) ASSERT_EQ(load_as<int32_t>(buf.data() + 3 + 4 * i), expect[i]);
}

TEST(Reduce, DivideFloatsMultipliesByTheReciprocal) {
  float f[3] = {3.0f, -1.0f, 10.0f};
  ASSERT_EQ(divide(DataType::Float32, f, 3, 3), Result::Success);
  EXPECT_EQ(f[0], 3.0f * float(1.0 / 3.0));
  EXPECT_EQ(f[2], 10.0f * float(1.0 / 3.0));
  double d[1] = {1.0};
  ASSERT_EQ(divide(DataType::Float64, d, 1, 3), Result::Success);
  EXPECT_EQ(d[0], 1.0 / 3.0);
  uint16_t h[1] = {0x4200};  // fp16 3.0
  ASSERT_EQ(divide(DataType::Float16, h, 1, 3), Result::Success);
  EXPECT_EQ(h[0], ref_encode(kFp16, 3.0f * float(1.0 / 3.0)));
}

TEST(Reduce, ScaleInPlace) {
  std::vector<float> v(101);
  for (size_t i = 0; i < v.size(); ++i) v[i] = float(i) - 50.0f;
  ASSERT_EQ(scale(DataType::Float32, v.data(), v.data(), v.size(), OpScalar::of(DataType::Float32, -0.5)),
            Result::Success);
  for (size_t i = 0; i < v.size(); ++i) EXPECT_EQ(v[i], (float(i) - 50.0f) * -0.5f);
}

TEST(Reduce, OpScalarEncodesInTheElementType) {
  EXPECT_EQ(OpScalar::of(DataType::Float8e4m3, 1000.0).bytes[0], 0x7E);
  EXPECT_EQ(OpScalar::of(DataType::Float8e5m2, 1.0).bytes[0], 0x3C);
  EXPECT_EQ(OpScalar::of(DataType::Bfloat16, 1.0).as_double(), 1.0);
  EXPECT_EQ(OpScalar::of(DataType::Float16, 0.1).as_double(), ref_decode(kFp16, ref_encode(kFp16, float(0.1))));
  EXPECT_EQ(int8_t(OpScalar::of(DataType::Int8, 300.0).bytes[0]), 44);
  EXPECT_EQ(OpScalar::of(DataType::Int32, -1.7).as_double(), -1.0);
  EXPECT_EQ(OpScalar::of(DataType::Int64, -2.0).as_bits(), uint64_t(-2));
  EXPECT_EQ(OpScalar::of(DataType::Uint8, 7.0).as_bits(), 7u);
  const double third = 1.0 / 3.0;
  EXPECT_EQ(OpScalar::of(DataType::Float64, third).as_double(), third);
  const uint16_t raw = 0x3555;
  EXPECT_EQ(OpScalar::from_bytes(DataType::Float16, &raw).as_double(), ref_decode(kFp16, raw));
}

// Two ranks' raw inputs meeting in one accumulate: each is multiplied by its own rank's scalar
// (NCCL's PreMulSum scalars differ per rank), for every type, against values computed here.
TEST(Reduce, PreMulSumScalesEachOperandByItsOwnScalar) {
  for (int t = 0; t < kNumDataTypes; ++t) {
    const auto type = static_cast<DataType>(t);
    const size_t size = datatype_size(type);
    const size_t n = 37;  // a SIMD body and a tail
    std::vector<unsigned char> dst(n * size), src(n * size);
    const bool is_float = datatype_is_float(type);
    // Small values: every product and sum is exact in every float type.
    for (size_t i = 0; i < n; ++i) {
      const double a = static_cast<double>(static_cast<int>(i % 3) - 1), b = static_cast<double>(static_cast<int>(i % 2));
      const OpScalar ea = OpScalar::of(type, a), eb = OpScalar::of(type, b);
      std::memcpy(dst.data() + i * size, ea.bytes, size);
      std::memcpy(src.data() + i * size, eb.bytes, size);
    }
    const OpScalar s_dst = OpScalar::of(type, is_float ? 2.0 : 3.0);
    const OpScalar s_src = OpScalar::of(type, is_float ? -1.0 : 5.0);
    ASSERT_EQ(accumulate(type, RedOp::PreMulSum, dst.data(), src.data(), n, &s_dst, &s_src), Result::Success)
        << datatype_name(type);
    for (size_t i = 0; i < n; ++i) {
      const double a = static_cast<double>(static_cast<int>(i % 3) - 1), b = static_cast<double>(static_cast<int>(i % 2));
      const OpScalar want = is_float ? OpScalar::of(type, 2.0 * a - b) : OpScalar::of(type, 3.0 * a + 5.0 * b);
      EXPECT_EQ(std::memcmp(dst.data() + i * size, want.bytes, size), 0) << datatype_name(type) << " element " << i;
    }
  }
}

TEST(Reduce, RejectsBadArguments) {
  float a[2] = {1, 2}, b[2] = {3, 4};
  const OpScalar s = OpScalar::of(DataType::Float32, 2.0);
  const OpScalar wrong = OpScalar::of(DataType::Float16, 2.0);
  EXPECT_EQ(accumulate(DataType::Float32, RedOp::Avg, a, b, 2), Result::InvalidArgument);
  EXPECT_EQ(accumulate(DataType::Float32, RedOp::Sum, a, b, 2, &s, nullptr), Result::InvalidArgument);
  EXPECT_EQ(accumulate(DataType::Float32, RedOp::PreMulSum, a, b, 2, &wrong, &wrong),
            Result::InvalidArgument);
  EXPECT_EQ(accumulate(DataType::Float32, RedOp::PreMulSum, a, b, 2, &s, &wrong), Result::InvalidArgument);
  EXPECT_EQ(accumulate(static_cast<DataType>(99), RedOp::Sum, a, b, 2), Result::InvalidArgument);
  EXPECT_EQ(accumulate(DataType::Float32, RedOp::Sum, nullptr, b, 2), Result::InvalidArgument);
  EXPECT_EQ(accumulate(DataType::Float32, RedOp::Sum, nullptr, nullptr, 0), Result::Success);
  EXPECT_EQ(divide(DataType::Int32, a, 2, 0), Result::InvalidArgument);
  EXPECT_EQ(a[0], 1.0f);  // nothing ran
}

TEST_F(ReduceTargets, ForcingTargetsByName) {
  const auto targets = simd_targets_available();
  EXPECT_EQ(force_simd_target("scalar"), Result::Success);
  EXPECT_STREQ(simd_target(), "SCALAR");
  EXPECT_EQ(simd_lanes_bytes(), 1u);  // HWY_SCALAR: one lane
  EXPECT_EQ(force_simd_target("no_such_target"), Result::InvalidArgument);
  EXPECT_EQ(force_simd_target(""), Result::Success);
  EXPECT_EQ(std::string_view(simd_target()), targets.front());
}

}  // namespace
}  // namespace braid::reduce
