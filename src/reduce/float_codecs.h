// Scalar conversions between fp32 and the narrow float formats (fp16, bf16, fp8 e4m3/e5m2).
// Round to nearest even; the SIMD kernels use the same bit recipe, so scalar and vector agree.
#pragma once

#include <cstdint>
#include <cstring>

namespace braid::reduce {

inline uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// A narrow binary float: kExpBits exponent bits, kManBits mantissa bits, bias kBias.
// kSaturate: overflow and infinity become the largest finite value (fp8, __NV_SATFINITE);
// otherwise overflow becomes infinity (IEEE fp16). kMaxFinite/kNaN are magnitude codes.
template <int ExpBits, int ManBits, int Bias, bool Saturate, uint32_t MaxFinite, uint32_t NaN>
struct NarrowFloat {
  static constexpr int kExpBits = ExpBits;
  static constexpr int kManBits = ManBits;
  static constexpr int kBias = Bias;
  static constexpr bool kSaturate = Saturate;
  static constexpr uint32_t kMaxFinite = MaxFinite;
  static constexpr uint32_t kNaN = NaN;
  static constexpr int kBits = 1 + kExpBits + kManBits;
  static constexpr uint32_t kMagMask = (1u << (kExpBits + kManBits)) - 1;
  // Magnitudes below this (fp32 bits) land in the narrow format's subnormal range.
  static constexpr uint32_t kMinNormalBits = uint32_t(127 - kBias + 1) << 23;
  // Adding 2^(kSubnormalStepExp + 23) rounds to a multiple of the subnormal step.
  static constexpr int kSubnormalStepExp = 1 - kBias - kManBits;
  static constexpr uint32_t kMagicBits = uint32_t(kSubnormalStepExp + 23 + 127) << 23;
  // fp8 e4m3 has no infinity: only S.1111.111 is special (NaN).
  static constexpr bool kHasInf = kMaxFinite != kNaN - 1;
  // The largest magnitude code a rounded result may take: +1 is the infinity code.
  static constexpr uint32_t kLimit = kSaturate ? kMaxFinite : kMaxFinite + 1;

  static uint32_t encode(float f) {
    const uint32_t bits = float_bits(f);
    const uint32_t sign = (bits >> 31) << (kBits - 1);
    const uint32_t abs = bits & 0x7FFFFFFFu;
    if (abs > 0x7F800000u) return sign | kNaN;
    uint32_t code;
    if (abs < kMinNormalBits) {
      const float magic = bits_float(kMagicBits);
      code = float_bits(bits_float(abs) + magic) - kMagicBits;
    } else {
      const uint32_t rounded = abs + ((1u << (22 - kManBits)) - 1) + ((abs >> (23 - kManBits)) & 1);
      code = (rounded >> (23 - kManBits)) - (uint32_t(127 - kBias) << kManBits);
    }
    if (code > kLimit) code = kLimit;
    return sign | code;
  }

  static float decode(uint32_t code) {
    const uint32_t sign = ((code >> (kBits - 1)) & 1u) << 31;
    const uint32_t mag = code & kMagMask;
    uint32_t bits;
    if (mag < (1u << kManBits)) {
      // Subnormal (or zero): mantissa times the step, exact in fp32.
      bits = float_bits(static_cast<float>(mag) * bits_float(uint32_t(kSubnormalStepExp + 127) << 23));
    } else if (!kHasInf && mag == kNaN) {
      bits = 0x7FC00000u;
    } else if (kHasInf && mag > kMaxFinite) {
      bits = 0x7F800000u | ((mag & ((1u << kManBits) - 1)) << (23 - kManBits));
    } else {
      bits = (mag << (23 - kManBits)) + (uint32_t(127 - kBias) << 23);
    }
    return bits_float(sign | bits);
  }
};

using Fp16Format = NarrowFloat<5, 10, 15, false, 0x7BFF, 0x7E00>;
using E4m3Format = NarrowFloat<4, 3, 7, true, 0x7E, 0x7F>;
using E5m2Format = NarrowFloat<5, 2, 15, true, 0x7B, 0x7F>;

inline float bf16_to_float(uint16_t h) { return bits_float(uint32_t(h) << 16); }
inline uint16_t float_to_bf16(float f) {
  const uint32_t bits = float_bits(f);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((bits >> 16) | 0x40);  // quiet NaN
  return static_cast<uint16_t>((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
}
inline float fp16_to_float(uint16_t h) { return Fp16Format::decode(h); }
inline uint16_t float_to_fp16(float f) { return static_cast<uint16_t>(Fp16Format::encode(f)); }
inline float e4m3_to_float(uint8_t b) { return E4m3Format::decode(b); }
inline uint8_t float_to_e4m3(float f) { return static_cast<uint8_t>(E4m3Format::encode(f)); }
inline float e5m2_to_float(uint8_t b) { return E5m2Format::decode(b); }
inline uint8_t float_to_e5m2(float f) { return static_cast<uint8_t>(E5m2Format::encode(f)); }

}  // namespace braid::reduce
