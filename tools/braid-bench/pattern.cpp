#include "pattern.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "reduce/float_codecs.h"

namespace braid::bench {

namespace {

// The largest integer up to which every integer is exact (integers: the largest value).
double exact_limit(DataType t) {
  switch (t) {
    case DataType::Int8: return 127;
    case DataType::Uint8: return 255;
    case DataType::Int32: return 2147483647.0;
    case DataType::Uint32: return 4294967295.0;
    case DataType::Int64:
    case DataType::Uint64: return 9007199254740992.0;
    case DataType::Float16: return 2048;
    case DataType::Float32: return 16777216.0;
    case DataType::Float64: return 9007199254740992.0;
    case DataType::Bfloat16: return 256;
    case DataType::Float8e4m3: return 16;
    case DataType::Float8e5m2: return 8;
  }
  return 1;
}

int mantissa_bits(DataType t) {
  switch (t) {
    case DataType::Float16: return 10;
    case DataType::Float32: return 23;
    case DataType::Float64: return 52;
    case DataType::Bfloat16: return 7;
    case DataType::Float8e4m3: return 3;
    case DataType::Float8e5m2: return 2;
    default: return 63;
  }
}

// Integers wrap: keep the low bits of the two's complement value.
uint64_t wrap(DataType t, uint64_t v) {
  const size_t bits = datatype_size(t) * 8;
  return bits >= 64 ? v : v & ((uint64_t{1} << bits) - 1);
}

bool power_of_two(int n) { return n > 0 && (n & (n - 1)) == 0; }

}  // namespace

void encode_value(DataType type, double value, void* out) {
  unsigned char* p = static_cast<unsigned char*>(out);
  if (!datatype_is_float(type)) {
    // Callers pass non-negative integers (or wrapped ones as exact doubles below 2^53).
    const uint64_t v = static_cast<uint64_t>(value);
    std::memcpy(p, &v, datatype_size(type));  // little-endian: the low bytes
    return;
  }
  const float f = static_cast<float>(value);
  switch (type) {
    case DataType::Float16: { const uint16_t h = reduce::float_to_fp16(f); std::memcpy(p, &h, 2); break; }
    case DataType::Bfloat16: { const uint16_t h = reduce::float_to_bf16(f); std::memcpy(p, &h, 2); break; }
    case DataType::Float32: std::memcpy(p, &f, 4); break;
    case DataType::Float64: std::memcpy(p, &value, 8); break;
    case DataType::Float8e4m3: p[0] = reduce::float_to_e4m3(f); break;
    case DataType::Float8e5m2: p[0] = reduce::float_to_e5m2(f); break;
    default: break;
  }
}

double decode_value(DataType type, const void* in) {
  const unsigned char* p = static_cast<const unsigned char*>(in);
  switch (type) {
    case DataType::Float16: { uint16_t h; std::memcpy(&h, p, 2); return reduce::fp16_to_float(h); }
    case DataType::Bfloat16: { uint16_t h; std::memcpy(&h, p, 2); return reduce::bf16_to_float(h); }
    case DataType::Float32: { float f; std::memcpy(&f, p, 4); return f; }
    case DataType::Float64: { double d; std::memcpy(&d, p, 8); return d; }
    case DataType::Float8e4m3: return reduce::e4m3_to_float(p[0]);
    case DataType::Float8e5m2: return reduce::e5m2_to_float(p[0]);
    default: {
      uint64_t v = 0;
      std::memcpy(&v, p, datatype_size(type));
      return static_cast<double>(v);
    }
  }
}

Pattern::Pattern(Collective c, DataType type, RedOp op, int nranks)
    : type_(type), esize_(datatype_size(type)), nranks_(nranks) {
  const double limit = exact_limit(type);
  const bool reduces = collective_reduces(c);
  const double n = nranks;
  // Sums keep n * 2 * value within the exact range; copies, max and min use up to 16.
  const bool sums = reduces && op != RedOp::Max && op != RedOp::Min;
  const double max_value = sums ? std::max(1.0, std::min(16.0, std::floor(limit / (2 * n))))
                                : std::min(16.0, limit);
  const bool is_float = datatype_is_float(type);
  for (size_t k = 0; k < kPeriod; ++k) {
    double v = static_cast<double>(k % (static_cast<size_t>(max_value) + 1));
    if (reduces && op == RedOp::Prod) v = (k % 3 == 0) ? 2 : 1;
    input_[k] = v;
    encode_value(type, v, &input_bytes_[k * esize_]);
  }
  if (reduces) {
    for (size_t k = 0; k < kPeriod; ++k) {
      // Element phase k of rank r holds input_[(k + 5r) % 17].
      double acc = 0;
      uint64_t iacc = 0;
      for (int r = 0; r < nranks; ++r) {
        const double v = input_[(k + 5 * static_cast<size_t>(r)) % kPeriod];
        const uint64_t iv = static_cast<uint64_t>(v);
        if (r == 0) {
          acc = v;
          iacc = iv;
          continue;
        }
        switch (op) {
          case RedOp::Prod: acc *= v; iacc *= iv; break;
          case RedOp::Max: acc = std::max(acc, v); iacc = std::max(iacc, iv); break;
          case RedOp::Min: acc = std::min(acc, v); iacc = std::min(iacc, iv); break;
          default: acc += v; iacc += iv; break;  // Sum, Avg, PreMulSum
        }
      }
      if (op == RedOp::PreMulSum) {
        acc *= kPreMulSumScalar;
        iacc *= static_cast<uint64_t>(kPreMulSumScalar);
      }
      if (op == RedOp::Avg) {
        acc /= n;
        iacc /= static_cast<uint64_t>(nranks);  // non-negative: truncation is C's
      }
      reduced_[k] = is_float ? acc : static_cast<double>(wrap(type, iacc));
      encode_value(type, reduced_[k], &reduced_bytes_[k * esize_]);
    }
    if (is_float) {
      const double top = op == RedOp::Prod ? std::pow(2.0, n) : n * max_value * kPreMulSumScalar;
      exact_ = top <= limit || op == RedOp::Max || op == RedOp::Min ||
               (op == RedOp::Prod && nranks <= 8);
      if (op == RedOp::Avg && !power_of_two(nranks)) exact_ = false;
      // Each of the n - 1 combines rounds once, plus the scaling.
      tolerance_ = exact_ ? 0 : std::ldexp(n + 1, -mantissa_bits(type));
    }
  }
}

void Pattern::fill_input(int rank, size_t first, size_t count, void* out) const {
  unsigned char* p = static_cast<unsigned char*>(out);
  const size_t phase = (first + 5 * static_cast<size_t>(rank)) % kPeriod;
  const size_t head = std::min(count, kPeriod);
  for (size_t j = 0; j < head; ++j)
    std::memcpy(p + j * esize_, &input_bytes_[((phase + j) % kPeriod) * esize_], esize_);
  // Doubling copies keep whole periods, so the phase carries on.
  size_t filled = head;
  while (filled < count) {
    const size_t n = std::min(filled, count - filled);
    std::memcpy(p + filled * esize_, p, n * esize_);
    filled += n;
  }
}

size_t Pattern::count_wrong_copy(int rank, size_t first, size_t count, const void* got) const {
  return count_wrong(input_bytes_, input_.data(), (first + 5 * static_cast<size_t>(rank)) % kPeriod,
                     count, static_cast<const unsigned char*>(got));
}

size_t Pattern::count_wrong_reduced(size_t first, size_t count, const void* got) const {
  return count_wrong(reduced_bytes_, reduced_.data(), first % kPeriod, count,
                     static_cast<const unsigned char*>(got));
}

size_t Pattern::count_wrong(const std::array<unsigned char, kPeriod * 8>& period, const double* values,
                            size_t phase, size_t count, const unsigned char* got) const {
  size_t wrong = 0;
  if (!exact_) {
    for (size_t j = 0; j < count; ++j) {
      const double expected = values[(phase + j) % kPeriod];
      const double v = decode_value(type_, got + j * esize_);
      if (!(std::fabs(v - expected) <= tolerance_ * std::max(1.0, std::fabs(expected)))) ++wrong;
    }
    return wrong;
  }
  // Compare whole reference blocks with memcmp; look element by element only where they differ.
  constexpr size_t kBlock = kPeriod * 1024;
  std::vector<unsigned char> reference(kBlock * esize_);
  for (size_t j = 0; j < kBlock; ++j)
    std::memcpy(&reference[j * esize_], &period[((phase + j) % kPeriod) * esize_], esize_);
  for (size_t start = 0; start < count; start += kBlock) {
    const size_t n = std::min(kBlock, count - start);
    const unsigned char* g = got + start * esize_;
    if (std::memcmp(g, reference.data(), n * esize_) == 0) continue;
    for (size_t j = 0; j < n; ++j)
      if (std::memcmp(g + j * esize_, &reference[j * esize_], esize_) != 0) ++wrong;
  }
  return wrong;
}

}  // namespace braid::bench
