// OpScalar: the PreMulSum scalar in the element type's own bytes.
#include <cmath>
#include <cstring>

#include "reduce/float_codecs.h"
#include "reduce/reduce.h"

namespace braid::reduce {

namespace {
// Converts to a 64-bit integer the way a C cast to the element type would, but defined for
// every input: truncate toward zero, wrap modulo 2^64 (NaN gives 0).
uint64_t wrap_to_u64(double v) {
  if (std::isnan(v)) return 0;
  const double t = std::trunc(v);
  if (t < 0) return uint64_t(0) - wrap_to_u64(-t);
  const double m = std::fmod(t, 18446744073709551616.0);  // exact, in [0, 2^64)
  if (m >= 9223372036854775808.0) return uint64_t(m - 9223372036854775808.0) + (uint64_t(1) << 63);
  return static_cast<uint64_t>(m);
}
}  // namespace

OpScalar OpScalar::of(DataType type, double value) {
  OpScalar s;
  s.type = type;
  const float f = static_cast<float>(value);
  switch (type) {
    case DataType::Float64: std::memcpy(s.bytes, &value, 8); break;
    case DataType::Float32: std::memcpy(s.bytes, &f, 4); break;
    // Narrow floats round twice (double -> fp32 -> narrow); exact for values that fit fp32.
    case DataType::Float16: { const uint16_t h = float_to_fp16(f); std::memcpy(s.bytes, &h, 2); break; }
    case DataType::Bfloat16: { const uint16_t h = float_to_bf16(f); std::memcpy(s.bytes, &h, 2); break; }
    case DataType::Float8e4m3: s.bytes[0] = float_to_e4m3(f); break;
    case DataType::Float8e5m2: s.bytes[0] = float_to_e5m2(f); break;
    default: {
      const uint64_t bits = wrap_to_u64(value);
      std::memcpy(s.bytes, &bits, datatype_size(type));  // little-endian: the low bytes
      break;
    }
  }
  return s;
}

OpScalar OpScalar::from_bytes(DataType type, const void* raw) {
  OpScalar s;
  s.type = type;
  std::memcpy(s.bytes, raw, datatype_size(type));
  return s;
}

double OpScalar::as_double() const {
  uint16_t h;
  switch (type) {
    case DataType::Float64: { double d; std::memcpy(&d, bytes, 8); return d; }
    case DataType::Float32: { float f; std::memcpy(&f, bytes, 4); return f; }
    case DataType::Float16: std::memcpy(&h, bytes, 2); return fp16_to_float(h);
    case DataType::Bfloat16: std::memcpy(&h, bytes, 2); return bf16_to_float(h);
    case DataType::Float8e4m3: return e4m3_to_float(bytes[0]);
    case DataType::Float8e5m2: return e5m2_to_float(bytes[0]);
    case DataType::Int8: case DataType::Int32: case DataType::Int64:
      return static_cast<double>(static_cast<int64_t>(as_bits()));
    default: return static_cast<double>(as_bits());
  }
}

uint64_t OpScalar::as_bits() const {
  switch (type) {
    case DataType::Int8: return uint64_t(int64_t(int8_t(bytes[0])));
    case DataType::Int32: { int32_t v; std::memcpy(&v, bytes, 4); return uint64_t(int64_t(v)); }
    default: {
      uint64_t v = 0;
      std::memcpy(&v, bytes, datatype_size(type));
      return v;
    }
  }
}

}  // namespace braid::reduce
