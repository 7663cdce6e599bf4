// An independent reference for the collective tests: element codecs written here (not braid's),
// deterministic inputs per (rank, element), and the expected result of every collective.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "common/types.h"

namespace braid::test {

inline double decode_fp16(uint16_t h) {
  const int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
  double v;
  if (e == 0) v = std::ldexp(m, -24);
  else if (e == 31) v = m ? NAN : INFINITY;
  else v = std::ldexp(1024 + m, e - 25);
  return s ? -v : v;
}
inline double decode_bf16(uint16_t b) {
  uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
inline double decode_e4m3(uint8_t b) {
  const int s = b >> 7, e = (b >> 3) & 15, m = b & 7;
  double v;
  if (e == 15 && m == 7) v = NAN;
  else if (e == 0) v = std::ldexp(m, -9);
  else v = std::ldexp(8 + m, e - 10);
  return s ? -v : v;
}
inline double decode_e5m2(uint8_t b) {
  const int s = b >> 7, e = (b >> 2) & 31, m = b & 3;
  double v;
  if (e == 31) v = m ? NAN : INFINITY;
  else if (e == 0) v = std::ldexp(m, -16);
  else v = std::ldexp(4 + m, e - 17);
  return s ? -v : v;
}

inline bool is_signed_int(DataType t) {
  return t == DataType::Int8 || t == DataType::Int32 || t == DataType::Int64;
}

// An element as the reference sees it: floats as double, integers as 64-bit bits.
struct Value {
  double f = 0;
  uint64_t i = 0;
};

inline Value load(DataType t, const unsigned char* p) {
  Value v;
  switch (t) {
    case DataType::Int8: { int8_t x; std::memcpy(&x, p, 1); v.i = static_cast<uint64_t>(static_cast<int64_t>(x)); break; }
    case DataType::Uint8: v.i = p[0]; break;
    case DataType::Int32: { int32_t x; std::memcpy(&x, p, 4); v.i = static_cast<uint64_t>(static_cast<int64_t>(x)); break; }
    case DataType::Uint32: { uint32_t x; std::memcpy(&x, p, 4); v.i = x; break; }
    case DataType::Int64:
    case DataType::Uint64: std::memcpy(&v.i, p, 8); break;
    case DataType::Float16: { uint16_t x; std::memcpy(&x, p, 2); v.f = decode_fp16(x); break; }
    case DataType::Bfloat16: { uint16_t x; std::memcpy(&x, p, 2); v.f = decode_bf16(x); break; }
    case DataType::Float32: { float x; std::memcpy(&x, p, 4); v.f = x; break; }
    case DataType::Float64: std::memcpy(&v.f, p, 8); break;
    case DataType::Float8e4m3: v.f = decode_e4m3(p[0]); break;
    case DataType::Float8e5m2: v.f = decode_e5m2(p[0]); break;
  }
  return v;
}

// Exact encoding of a value the type can hold (inputs and exact results are chosen so).
inline void store_exact(DataType t, double value, unsigned char* p) {
  static const auto tables = [] {
    std::map<int, std::map<double, uint16_t>> m;
    for (uint32_t c = 0; c < 65536; ++c) {
      double a = decode_fp16(static_cast<uint16_t>(c)), b = decode_bf16(static_cast<uint16_t>(c));
      if (!std::isnan(a) && !(a == 0 && std::signbit(a))) m[0].emplace(a, static_cast<uint16_t>(c));
      if (!std::isnan(b) && !(b == 0 && std::signbit(b))) m[1].emplace(b, static_cast<uint16_t>(c));
    }
    for (uint32_t c = 0; c < 256; ++c) {
      double a = decode_e4m3(static_cast<uint8_t>(c)), b = decode_e5m2(static_cast<uint8_t>(c));
      if (!std::isnan(a) && !(a == 0 && std::signbit(a))) m[2].emplace(a, static_cast<uint16_t>(c));
      if (!std::isnan(b) && !(b == 0 && std::signbit(b))) m[3].emplace(b, static_cast<uint16_t>(c));
    }
    return m;
  }();
  auto code = [&](int table) { return tables.at(table).at(value); };
  switch (t) {
    case DataType::Float16: { uint16_t c = code(0); std::memcpy(p, &c, 2); break; }
    case DataType::Bfloat16: { uint16_t c = code(1); std::memcpy(p, &c, 2); break; }
    case DataType::Float8e4m3: p[0] = static_cast<uint8_t>(code(2)); break;
    case DataType::Float8e5m2: p[0] = static_cast<uint8_t>(code(3)); break;
    case DataType::Float32: { float f = static_cast<float>(value); std::memcpy(p, &f, 4); break; }
    case DataType::Float64: std::memcpy(p, &value, 8); break;
    default: break;
  }
}
inline void store_int(DataType t, uint64_t bits, unsigned char* p) {
  std::memcpy(p, &bits, datatype_size(t));  // little-endian truncation = wrap
}

inline uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  return x ^ (x >> 33);
}

// Input element `index` of `rank` (index over the whole send buffer).
inline void input_element(DataType t, RedOp op, int rank, uint64_t index, unsigned char* p) {
  const uint64_t h = mix(index * 1315423911ull + static_cast<uint64_t>(rank) * 2654435761ull + 17);
  if (!datatype_is_float(t)) {
    store_int(t, h, p);
    return;
  }
  double v;
  if (op == RedOp::Prod) {
    static const double choices[] = {-2, -1, 1, 2};
    v = choices[h % 4];
  } else if (t == DataType::Float8e5m2) {
    v = static_cast<double>(static_cast<int>(h % 3) - 1);  // partial sums stay exact
  } else {
    v = static_cast<double>(static_cast<int>(h % 5) - 2);
  }
  store_exact(t, v, p);
}

inline double type_epsilon(DataType t) {
  switch (t) {
    case DataType::Float16: return std::ldexp(1, -10);
    case DataType::Bfloat16: return std::ldexp(1, -7);
    case DataType::Float32: return std::ldexp(1, -23);
    case DataType::Float64: return std::ldexp(1, -52);
    case DataType::Float8e4m3: return std::ldexp(1, -3);
    case DataType::Float8e5m2: return std::ldexp(1, -2);
    default: return 0;
  }
}

// The PreMulSum scalar the tests use: exact in every type, so results stay exact.
inline double premul_value(DataType t) { return datatype_is_float(t) ? 2.0 : 3.0; }

// Combines the ranks' inputs for one element. Returns false with *tolerance for inexact (Avg on
// floats); integer results are bits in `bits`.
struct Expected {
  double f = 0;
  uint64_t bits = 0;
  double tolerance = 0;
};

inline Expected combine(DataType t, RedOp op, int ranks, const std::vector<Value>& in) {
  Expected e;
  const size_t width = datatype_size(t) * 8;
  const uint64_t mask = width == 64 ? ~0ull : ((1ull << width) - 1);
  auto sext = [&](uint64_t b) -> int64_t {
    b &= mask;
    if (width < 64 && (b >> (width - 1)) & 1) b |= ~mask;
    return static_cast<int64_t>(b);
  };
  if (datatype_is_float(t)) {
    double acc = in[0].f;
    double magnitude = std::fabs(in[0].f);
    for (size_t i = 1; i < in.size(); ++i) {
      const double x = in[i].f;
      magnitude += std::fabs(x);
      switch (op) {
        case RedOp::Sum: case RedOp::Avg: case RedOp::PreMulSum: acc += x; break;
        case RedOp::Prod: acc *= x; break;
        case RedOp::Max: acc = std::max(acc, x); break;
        case RedOp::Min: acc = std::min(acc, x); break;
      }
    }
    if (op == RedOp::PreMulSum) acc *= premul_value(t);
    if (op == RedOp::Avg) {
      acc /= ranks;
      e.tolerance = (ranks + 2) * type_epsilon(t) * magnitude / ranks * 2 + 1e-300;
    }
    e.f = acc;
    return e;
  }
  uint64_t acc = in[0].i;
  if (op == RedOp::PreMulSum) acc *= static_cast<uint64_t>(premul_value(t));
  for (size_t i = 1; i < in.size(); ++i) {
    const uint64_t x = in[i].i;
    switch (op) {
      case RedOp::Sum: case RedOp::Avg: acc += x; break;
      case RedOp::PreMulSum: acc += x * static_cast<uint64_t>(premul_value(t)); break;
      case RedOp::Prod: acc *= x; break;
      case RedOp::Max:
        acc = is_signed_int(t) ? (sext(x) > sext(acc) ? x : acc) : ((x & mask) > (acc & mask) ? x : acc);
        break;
      case RedOp::Min:
        acc = is_signed_int(t) ? (sext(x) < sext(acc) ? x : acc) : ((x & mask) < (acc & mask) ? x : acc);
        break;
    }
  }
  if (op == RedOp::Avg) {
    if (is_signed_int(t)) acc = static_cast<uint64_t>(sext(acc) / ranks);
    else acc = (acc & mask) / static_cast<uint64_t>(ranks);
  }
  e.bits = acc & mask;
  return e;
}

inline bool matches(DataType t, const Expected& e, const unsigned char* got) {
  const Value v = load(t, got);
  if (!datatype_is_float(t)) {
    const size_t width = datatype_size(t) * 8;
    const uint64_t mask = width == 64 ? ~0ull : ((1ull << width) - 1);
    return (v.i & mask) == e.bits;
  }
  if (e.tolerance == 0) return v.f == e.f;
  return std::fabs(v.f - e.f) <= e.tolerance;
}

}  // namespace braid::test
