// Reductions on the GPU for the device placement (REDUCE into a device buffer) and for finishing
// PreMulSum / Avg, with the host kernels' semantics (src/reduce/reduce.h): low-precision types
// combine in fp32 and round once per call to nearest even; integers wrap.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "common/types.h"

namespace braid::cuda {

// The PreMulSum scalar in the element type's own bytes (as ncclRedOpCreatePreMulSum gets it).
struct DeviceScalar {
  alignas(8) unsigned char bytes[8] = {};
};

// Every kernel below runs at most `max_blocks` blocks of 256 threads (a grid-stride loop covers the
// rest): fewer blocks leave SMs to NCCL's kernels running beside braid's share (BRAID_REDUCE_BLOCKS).
constexpr unsigned kDefaultReduceBlocks = 1024;

// dst[i] = A(dst[i]) op B(src[i]); A multiplies by *dst_scale, B by *src_scale where given
// (PreMulSum: each raw input by its own rank's scalar).
cudaError_t accumulate(DataType type, RedOp op, void* dst, const void* src, size_t n,
                       const DeviceScalar* dst_scale, const DeviceScalar* src_scale, cudaStream_t stream,
                       unsigned max_blocks = kDefaultReduceBlocks);
// dst[i] = scalar * src[i] (dst may equal src).
cudaError_t scale(DataType type, void* dst, const void* src, size_t n, const DeviceScalar& scalar,
                  cudaStream_t stream, unsigned max_blocks = kDefaultReduceBlocks);
// data[i] /= divisor (integer Avg; floats multiply by 1/divisor).
cudaError_t divide(DataType type, void* data, size_t n, uint64_t divisor, cudaStream_t stream,
                   unsigned max_blocks = kDefaultReduceBlocks);

// Loads every kernel above on the current device now. Under CUDA's lazy loading (the default) a
// kernel's first launch loads its module, which can wait for the kernels already running: when
// those are NCCL's, spinning for a peer whose progress needs this launch, that wait never ends.
// NCCL loads its own kernels when a communicator is made, and so does braid.
cudaError_t load_reduce_kernels();

}  // namespace braid::cuda
