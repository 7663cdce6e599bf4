// The collective tests' own reference, independent of braid's code: element encodings written
// here, deterministic inputs per (rank, element) and the expected value of every reduction.
// Float inputs are small integers, so sums, products and PreMulSum by each rank's scalar stay
// exact in every type for up to 8 ranks; float Avg gets a tolerance where it may round (see AvgCheck).
// Integers use all their bits and wrap as two's complement.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "common/types.h"

namespace braid::test {

// A binary float format: exponent bits, mantissa bits, bias, and whether the all-ones exponent
// means infinity/NaN (IEEE) or only S.1111.111 is NaN (fp8 e4m3).
struct FloatFormat {
  int exp_bits, man_bits, bias;
  bool ieee_specials;
};

inline FloatFormat format_of(DataType t) {
  switch (t) {
    case DataType::Float16: return {5, 10, 15, true};
    case DataType::Bfloat16: return {8, 7, 127, true};
    case DataType::Float8e4m3: return {4, 3, 7, false};
    case DataType::Float8e5m2: return {5, 2, 15, true};
    default: return {0, 0, 0, true};
  }
}

// Encodes a value the format holds exactly as a normal number (or zero).
inline uint32_t encode_exact(const FloatFormat& f, double v) {
  if (v == 0) return 0;
  const uint32_t sign = v < 0 ? 1u : 0u;
  const double a = std::fabs(v);
  const int e = std::ilogb(a);
  const double mantissa = (std::ldexp(a, -e) - 1) * std::ldexp(1.0, f.man_bits);
  return (sign << (f.exp_bits + f.man_bits)) | (static_cast<uint32_t>(e + f.bias) << f.man_bits) |
         static_cast<uint32_t>(mantissa);
}

inline double decode(const FloatFormat& f, uint32_t code) {
  const uint32_t man = code & ((1u << f.man_bits) - 1);
  const uint32_t exp = (code >> f.man_bits) & ((1u << f.exp_bits) - 1);
  const bool negative = (code >> (f.exp_bits + f.man_bits)) & 1;
  const uint32_t all_ones = (1u << f.exp_bits) - 1;
  double v;
  if (f.ieee_specials && exp == all_ones) v = man != 0 ? NAN : INFINITY;
  else if (!f.ieee_specials && exp == all_ones && man == (1u << f.man_bits) - 1) v = NAN;
  else if (exp == 0) v = std::ldexp(static_cast<double>(man), 1 - f.bias - f.man_bits);
  else v = std::ldexp(1.0 + std::ldexp(static_cast<double>(man), -f.man_bits), static_cast<int>(exp) - f.bias);
  return negative ? -v : v;
}

inline void store_float(DataType t, double v, unsigned char* p) {
  switch (t) {
    case DataType::Float32: { const float x = static_cast<float>(v); std::memcpy(p, &x, 4); return; }
    case DataType::Float64: std::memcpy(p, &v, 8); return;
    case DataType::Float16:
    case DataType::Bfloat16: { const uint16_t c = static_cast<uint16_t>(encode_exact(format_of(t), v)); std::memcpy(p, &c, 2); return; }
    default: p[0] = static_cast<uint8_t>(encode_exact(format_of(t), v)); return;
  }
}

inline double load_float(DataType t, const unsigned char* p) {
  switch (t) {
    case DataType::Float32: { float x; std::memcpy(&x, p, 4); return x; }
    case DataType::Float64: { double x; std::memcpy(&x, p, 8); return x; }
    case DataType::Float16:
    case DataType::Bfloat16: { uint16_t c; std::memcpy(&c, p, 2); return decode(format_of(t), c); }
    default: return decode(format_of(t), p[0]);
  }
}

inline uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

inline bool is_signed(DataType t) {
  return t == DataType::Int8 || t == DataType::Int32 || t == DataType::Int64;
}
inline uint64_t width_mask(DataType t) {
  const size_t bits = datatype_size(t) * 8;
  return bits == 64 ? ~0ull : (1ull << bits) - 1;
}
inline int64_t sign_extend(DataType t, uint64_t bits) {
  const size_t width = datatype_size(t) * 8;
  bits &= width_mask(t);
  if (width < 64 && ((bits >> (width - 1)) & 1)) bits |= ~width_mask(t);
  return static_cast<int64_t>(bits);
}

// Rank `rank`'s PreMulSum scalar. NCCL lets every rank bring its own scalar (nccl-tests does), so
// the scalars differ by rank, in sign and, where exact, in magnitude. fp8 keeps +-2 so every
// partial sum of 8 ranks' products is an even integer up to 32, exact in e4m3 and e5m2.
inline double premul_scalar(DataType t, int rank) {
  if (!datatype_is_float(t)) return static_cast<double>(3 + 2 * rank);
  if (t == DataType::Float8e4m3 || t == DataType::Float8e5m2) return rank % 2 == 0 ? 2.0 : -2.0;
  static const double scalars[] = {2, -1, 3, -2, 1, -3, 0.5, 4};
  return scalars[rank % 8];
}

// Float input value of element `index` of `rank` (small integers; {-2,-1,1,2} for Prod).
inline double float_input(DataType t, RedOp op, int rank, uint64_t index) {
  const uint64_t h = mix(index * 0x100000001b3ull ^ (static_cast<uint64_t>(rank) << 48));
  if (op == RedOp::Prod) {
    static const double choices[] = {-2, -1, 1, 2};
    return choices[h % 4];
  }
  if (t == DataType::Float8e5m2) return static_cast<double>(static_cast<int>(h % 3) - 1);  // partial sums stay exact
  return static_cast<double>(static_cast<int>(h % 5) - 2);
}

inline uint64_t int_input(int rank, uint64_t index) {
  return mix(index * 0x100000001b3ull ^ (static_cast<uint64_t>(rank) << 48) ^ 0x5555);
}

// Writes input element `index` (over the whole send buffer) of `rank` to `p`.
inline void write_input(DataType t, RedOp op, int rank, uint64_t index, unsigned char* p) {
  if (datatype_is_float(t)) {
    store_float(t, float_input(t, op, rank, index), p);
  } else {
    const uint64_t v = int_input(rank, index);
    std::memcpy(p, &v, datatype_size(t));  // little-endian truncation = wrap
  }
}

// How close a float Avg must come. The sum of the inputs is exact, and so is dividing it by a
// power of two; otherwise 1/ranks and every partial sum may round, which the tolerance bounds.
enum class AvgCheck {
  ExactAtPowersOfTwo,   // exact where ranks is a power of two, the tolerance elsewhere
  BoundedAtEveryCount,  // the tolerance at every rank count (never zero)
};

struct Expected {
  double value = 0;       // floats
  uint64_t bits = 0;      // integers (masked to the width)
  double tolerance = 0;   // floats, absolute; 0: exact
};

// The reduction of element `index` over `ranks` ranks.
inline Expected reduce_expected(DataType t, RedOp op, int ranks, uint64_t index, AvgCheck avg) {
  Expected e;
  if (datatype_is_float(t)) {
    double acc = 0, magnitude = 0;
    for (int r = 0; r < ranks; ++r) {
      double x = float_input(t, op, r, index);
      if (op == RedOp::PreMulSum) x *= premul_scalar(t, r);
      magnitude += std::fabs(x);
      if (r == 0) { acc = x; continue; }
      switch (op) {
        case RedOp::Prod: acc *= x; break;
        case RedOp::Max: acc = std::max(acc, x); break;
        case RedOp::Min: acc = std::min(acc, x); break;
        default: acc += x; break;
      }
    }
    if (op == RedOp::Avg) {
      acc /= ranks;
      const int man = t == DataType::Float32 ? 23 : t == DataType::Float64 ? 52 : format_of(t).man_bits;
      const double bound = (ranks + 2) * std::ldexp(1.0, -man) * magnitude / ranks * 2;
      if (avg == AvgCheck::BoundedAtEveryCount) e.tolerance = bound + 1e-300;
      else if ((ranks & (ranks - 1)) != 0) e.tolerance = bound;
    }
    e.value = acc;
    return e;
  }
  const uint64_t mask = width_mask(t);
  uint64_t acc = 0;
  for (int r = 0; r < ranks; ++r) {
    uint64_t x = int_input(r, index) & mask;
    if (op == RedOp::PreMulSum) x *= static_cast<uint64_t>(premul_scalar(t, r));
    if (r == 0) { acc = x; continue; }
    switch (op) {
      case RedOp::Prod: acc *= x; break;
      case RedOp::Max:
        acc = is_signed(t) ? (sign_extend(t, x) > sign_extend(t, acc) ? x : acc) : ((x & mask) > (acc & mask) ? x : acc);
        break;
      case RedOp::Min:
        acc = is_signed(t) ? (sign_extend(t, x) < sign_extend(t, acc) ? x : acc) : ((x & mask) < (acc & mask) ? x : acc);
        break;
      default: acc += x; break;
    }
  }
  if (op == RedOp::Avg) {
    // The sum wraps in the type first, then divides truncating toward zero (C's rule).
    acc = is_signed(t) ? static_cast<uint64_t>(sign_extend(t, acc) / ranks) : (acc & mask) / static_cast<uint64_t>(ranks);
  }
  e.bits = acc & mask;
  return e;
}

inline bool matches(DataType t, const Expected& e, const unsigned char* got) {
  if (!datatype_is_float(t)) {
    uint64_t v = 0;
    std::memcpy(&v, got, datatype_size(t));
    return (v & width_mask(t)) == e.bits;
  }
  const double v = load_float(t, got);
  if (e.tolerance == 0) return v == e.value;
  return std::fabs(v - e.value) <= e.tolerance;
}

}  // namespace braid::test
