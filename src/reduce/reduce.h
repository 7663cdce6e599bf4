// Host reduction kernels: combine two buffers element-wise for every NCCL type and operator.
//
// Semantics (shared by every SIMD target, so results are bit-identical whichever runs):
// - Integers wrap (two's complement), as NCCL's device code does.
// - fp64 and fp32 combine in their own precision. fp16, bf16, fp8 e4m3 and fp8 e5m2 are
//   widened to fp32, combined in fp32 and rounded ONCE per call to the nearest even.
// - fp8 e4m3 is the OCP "FN" variant (no infinities, max 448, NaN = S.1111.111); fp8 results
//   follow __nv_cvt_float_to_fp8(.., __NV_SATFINITE, ..): finite overflow AND +-infinity
//   saturate to +-448 (e4m3) / +-57344 (e5m2); NaN stays NaN (written as S.1111.111 / S.11111.11).
// - fp16 and bf16 are IEEE: overflow rounds to infinity; NaN stays NaN (payload unspecified).
// - Min/Max propagate NaN (if either operand is NaN the result is NaN, like IEEE 754-2019
//   minimum/maximum and unlike fminf/fmaxf) and order zeros: min(-0, +0) = -0, max = +0.
//   So the result never depends on operand order or on the SIMD target.
// - PreMulSum: dst = A(dst) + B(src) where A multiplies by *dst_scale and B by *src_scale when
//   given (an operand that is still a raw user input is pre-multiplied by the scalar of the rank
//   whose input it is: NCCL's scalars differ per rank), each product rounded in the combine
//   precision (no fused multiply-add). When both operands are scaled by different scalars, dst
//   is scaled first and stored, then the sum is formed (one more rounding for narrow types).
// Pointers need no alignment; any n works (0 included); dst and src must not partially overlap
// (dst == src is fine).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "common/types.h"

namespace braid::reduce {

// The scalar of PreMulSum, held in the element type's own representation (raw bytes, as
// ncclRedOpCreatePreMulSum receives it) and decoded once by the kernels.
struct OpScalar {
  DataType type = DataType::Float32;
  alignas(8) unsigned char bytes[8] = {};

  // Encodes `value` in `type` (floats rounded to nearest even, integers truncated and wrapped).
  static OpScalar of(DataType type, double value);
  // Copies datatype_size(type) raw bytes.
  static OpScalar from_bytes(DataType type, const void* raw);

  // The value widened to the precision the kernels combine in: double for fp64, exact fp32
  // value (as double) for the other float types, the integer value for integer types.
  double as_double() const;
  // Integer types: the value as 64-bit two's complement bits (sign-extended for signed types).
  uint64_t as_bits() const;
};

// dst[i] = A(dst[i]) op B(src[i]) for i < n (see the file comment). The scales are PreMulSum's
// (null: that operand is already scaled) and must have the data's type; other ops take none.
// Avg is rejected: the engine turns float Avg into PreMulSum(1/n) and integer Avg into
// Sum + divide(). Returns InvalidArgument (and does nothing) on a bad combination.
Result accumulate(DataType type, RedOp op, void* dst, const void* src, size_t n,
                  const OpScalar* dst_scale = nullptr, const OpScalar* src_scale = nullptr);

// dst[i] = s * src[i]; dst may equal src. `s` must have the same type.
Result scale(DataType type, void* dst, const void* src, size_t n, const OpScalar& s);

// The finish of Avg: integers divide by `divisor`, signed ones truncating toward zero (as C);
// float types multiply by 1/divisor (the reciprocal rounded to fp64 for fp64, to fp32 for all
// the others, as NCCL's PreMulSum(1/n)). divisor must be > 0.
Result divide(DataType type, void* data, size_t n, uint64_t divisor);

// The Highway target the kernels run on now, e.g. "AVX3_DL", "AVX3", "AVX2", "SSE4", "SSSE3",
// "SCALAR" (Highway 1.0.3 has no AVX3_SPR; its portable fallback here is HWY_SCALAR, one lane).
const char* simd_target();
// The widest vector the chosen target uses, in bytes (1 for SCALAR, 16 SSE4, 32 AVX2, 64 AVX3).
size_t simd_lanes_bytes();
// The targets this build can run on this CPU, best first, as simd_target() names them.
std::vector<std::string_view> simd_targets_available();
// Forces a target by case-insensitive name ("avx2", "sse4", "scalar", ...); empty
// returns to the best. BRAID_SIMD is applied the same way at the first kernel call.
Result force_simd_target(std::string_view name);

}  // namespace braid::reduce
