// The Highway kernels, dispatched at run time to the best (or the forced) target.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "reduce/kernel.h"

namespace braid::reduce {

// Runs the kernel with SIMD; false when this type/kernel has no SIMD version (the caller then
// runs the portable one).
bool run_simd(DataType type, const KernelArgs& args);

// Applies BRAID_SIMD once per process (later calls do nothing).
void apply_simd_setting_once();

}  // namespace braid::reduce
