// One reduction over several GPUs' buffers at once, for braid's own NVLink AllReduce
// (src/peer): a rank reads its part of every rank's input (its peers' through peer mappings, over
// NVLink), combines them in rank order and writes the result to its part of every rank's output.
// Each element is computed once, on one GPU, so every rank gets the same bits.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "common/types.h"

namespace braid::cuda {

inline constexpr int kMaxPeerOperands = 8;

// Pointers to the first element of the part, as this GPU addresses them (its own or mapped).
struct PeerOperands {
  const void* inputs[kMaxPeerOperands] = {};  // combined in this order
  int n_inputs = 0;
  void* outputs[kMaxPeerOperands] = {};  // each gets the same result
  int n_outputs = 0;
};

// outputs[j][i] = inputs[0][i] op ... op inputs[n_inputs - 1][i] for i < n. Avg averages over
// n_inputs as braid's engine does (floats: every input times 1/n in the element type, then the
// sum; integers: the wrapped sum divided). PreMulSum is not carried (its scalars are per rank).
// Small floats combine in fp32 and round once. 16-byte accesses where every pointer allows.
cudaError_t reduce_to_all(DataType type, RedOp op, const PeerOperands& operands, size_t n, cudaStream_t stream,
                          unsigned blocks, unsigned threads);

// bytes [0, bytes) of `src` into `dst` on `stream` by the SMs (reduce_to_all of one operand, as
// bytes: bit for bit). The runtime's cudaMemcpyAsync within one GPU costs the calling thread about
// 6 us on H200, a launch about 2 (bench/results/gpus2-own-copy/). cudaErrorInvalidValue unless
// both are 16-byte aligned, where the kernel would move a byte per load: copy those another way.
cudaError_t copy_on_sms(void* dst, const void* src, size_t bytes, cudaStream_t stream);

// The grid reduce_to_all gets unless told otherwise: enough bytes in flight to cover NVLink's
// latency from every SM.
inline constexpr unsigned kPeerReduceBlocks = 264, kPeerReduceThreads = 512;

// Loads the kernel above for every type now (see load_reduce_kernels in device_reduce.h: a lazy
// load at first launch can wait for NCCL's running kernels for ever).
cudaError_t load_peer_reduce_kernels();

}  // namespace braid::cuda
