// What one kernel pass does; shared by the portable and the SIMD implementations.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/types.h"

namespace braid::reduce {

enum class Kernel : int {
  Sum,         // dst = dst + src
  Prod,        // dst = dst * src
  Min,         // dst = min(dst, src)
  Max,         // dst = max(dst, src)
  PreMulBoth,  // dst = s*dst + s*src
  PreMulDst,   // dst = s*dst + src
  PreMulSrc,   // dst = dst + s*src
  Scale,       // dst = s*src
};

// One call's arguments. float_scalar is the scalar in the combine precision (fp64 or an exact
// fp32 value); int_scalar its integer bits for integer types.
struct KernelArgs {
  Kernel kernel;
  void* dst;
  const void* src;
  size_t n;
  double float_scalar;
  uint64_t int_scalar;
};

// Plain C++ kernels for every type and kernel: the reference semantics, and the path for the
// cases the SIMD code does not cover (integer products and pre-multiplies).
void run_portable(DataType type, const KernelArgs& args);
// Integer Avg finish: divide with truncation toward zero.
void divide_integers_portable(DataType type, void* data, size_t n, uint64_t divisor);

}  // namespace braid::reduce
