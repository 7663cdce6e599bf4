// cuda::reduce_to_all on one GPU, its "ranks" being buffers of that GPU: every dtype and op it
// carries, 1-4 inputs, 1-3 outputs, sizes around its 16-byte vectors and unroll, pointers on and
// off 16-byte boundaries (the scalar path). Checked element by element against the tests' host
// reference (tests/support/reference.h), every output the same bits. The 2-GPU form, through the
// drop-in, is tests/shim's matrix.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "cuda/peer_reduce.h"
#include "support/reference.h"

namespace braid::test {
namespace {

constexpr DataType kTypes[] = {DataType::Int8,    DataType::Uint8,   DataType::Int32,    DataType::Uint32,
                               DataType::Int64,   DataType::Uint64,  DataType::Float16,  DataType::Float32,
                               DataType::Float64, DataType::Bfloat16, DataType::Float8e4m3, DataType::Float8e5m2};
constexpr RedOp kOps[] = {RedOp::Sum, RedOp::Prod, RedOp::Max, RedOp::Min, RedOp::Avg};

class PeerReduce : public ::testing::Test {
 protected:
  void SetUp() override {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) GTEST_SKIP() << "no GPU";
    ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
    ASSERT_EQ(cudaStreamCreate(&stream_), cudaSuccess);
  }
  void TearDown() override {
    for (void* p : buffers_) cudaFree(p);
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }
  unsigned char* device_buffer(size_t bytes) {
    void* p = nullptr;
    EXPECT_EQ(cudaMalloc(&p, bytes + 64), cudaSuccess);
    buffers_.push_back(p);
    return static_cast<unsigned char*>(p);
  }

  // Runs one case; returns "" or the first mismatch.
  std::string run(DataType t, RedOp op, int inputs, int outputs, size_t n, size_t misalign_elements) {
    const size_t es = datatype_size(t), bytes = n * es, shift = misalign_elements * es;
    cuda::PeerOperands o;
    o.n_inputs = inputs;
    o.n_outputs = outputs;
    std::vector<unsigned char> host(bytes + 1);
    for (int r = 0; r < inputs; ++r) {
      for (size_t i = 0; i < n; ++i) write_input(t, op, r, i, &host[i * es]);
      unsigned char* d = device_buffer(bytes) + shift;
      if (cudaMemcpy(d, host.data(), bytes, cudaMemcpyHostToDevice) != cudaSuccess) return "cudaMemcpy in";
      o.inputs[r] = d;
    }
    for (int j = 0; j < outputs; ++j) o.outputs[j] = device_buffer(bytes) + shift;
    // Few blocks for the largest size, so the grid-stride loop goes round many times.
    const unsigned blocks = n > 100000 ? 3 : cuda::kPeerReduceBlocks;
    const cudaError_t e = cuda::reduce_to_all(t, op, o, n, stream_, blocks, cuda::kPeerReduceThreads);
    if (e != cudaSuccess) return std::string("reduce_to_all: ") + cudaGetErrorString(e);
    if (cudaStreamSynchronize(stream_) != cudaSuccess) return "cudaStreamSynchronize";
    std::vector<unsigned char> first(bytes + 1), got(bytes + 1);
    for (int j = 0; j < outputs; ++j) {
      if (cudaMemcpy(got.data(), o.outputs[j], bytes, cudaMemcpyDeviceToHost) != cudaSuccess) return "cudaMemcpy out";
      if (j == 0) {
        first = got;
        for (size_t i = 0; i < n; ++i)
          if (!matches(t, reduce_expected(t, op, inputs, i, AvgCheck::ExactAtPowersOfTwo), &got[i * es]))
            return "element " + std::to_string(i) + " differs from the reference";
      } else if (std::memcmp(first.data(), got.data(), bytes) != 0) {
        return "output " + std::to_string(j) + " differs from output 0";
      }
    }
    for (void* p : buffers_) cudaFree(p);
    buffers_.clear();
    return "";
  }

  cudaStream_t stream_ = nullptr;
  std::vector<void*> buffers_;
};

TEST_F(PeerReduce, EveryTypeAndOpMatchesTheReference) {
  for (DataType t : kTypes)
    for (RedOp op : kOps)
      for (int inputs : {1, 2, 3, 4})
        for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{4099}, (size_t{1} << 18) + 3})
          for (size_t misalign : {size_t{0}, size_t{1}}) {
            const int outputs = 1 + (inputs + static_cast<int>(n)) % 3;
            SCOPED_TRACE(std::string(datatype_name(t)) + " " + std::string(redop_name(op)) + " inputs " +
                         std::to_string(inputs) + " n " + std::to_string(n) + " misalign " + std::to_string(misalign));
            EXPECT_EQ(run(t, op, inputs, outputs, n, misalign), "");
          }
}

TEST_F(PeerReduce, RefusesWhatItDoesNotCarry) {
  cuda::PeerOperands o;
  unsigned char* d = device_buffer(64);
  o.inputs[0] = o.inputs[1] = d;
  o.outputs[0] = d;
  o.n_inputs = 2;
  o.n_outputs = 1;
  EXPECT_EQ(cuda::reduce_to_all(DataType::Float32, RedOp::PreMulSum, o, 4, stream_, 1, 256), cudaErrorInvalidValue);
  o.n_inputs = cuda::kMaxPeerOperands + 1;
  EXPECT_EQ(cuda::reduce_to_all(DataType::Float32, RedOp::Sum, o, 4, stream_, 1, 256), cudaErrorInvalidValue);
  o.n_inputs = 2;
  o.n_outputs = 0;
  EXPECT_EQ(cuda::reduce_to_all(DataType::Float32, RedOp::Sum, o, 4, stream_, 1, 256), cudaErrorInvalidValue);
}

// An AllGather's own block: every byte as it was (NaN patterns of every float type included), and
// unaligned buffers refused (the caller copies those another way).
TEST_F(PeerReduce, CopyOnSmsMovesEveryBitAndRefusesUnalignedBuffers) {
  for (size_t bytes : {size_t{16}, size_t{4096} + 48, (size_t{8} << 20) + 16}) {
    std::vector<unsigned char> in(bytes), out(bytes, 0);
    for (size_t i = 0; i < bytes; ++i) in[i] = static_cast<unsigned char>((i * 131 + 7) ^ (i >> 8));
    for (size_t i = 0; i + 4 <= bytes && i < 64; i += 4) std::memcpy(&in[i], "\xff\xff\xc0\x7f", 4);
    unsigned char* src = device_buffer(bytes);
    unsigned char* dst = device_buffer(bytes);
    ASSERT_EQ(cudaMemcpy(src, in.data(), bytes, cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(cuda::copy_on_sms(dst, src, bytes, stream_), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(out.data(), dst, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_EQ(std::memcmp(in.data(), out.data(), bytes), 0) << bytes << " bytes";
    EXPECT_EQ(cuda::copy_on_sms(dst + 1, src, 16, stream_), cudaErrorInvalidValue);
    EXPECT_EQ(cuda::copy_on_sms(dst, src + 8, 16, stream_), cudaErrorInvalidValue);
  }
}

}  // namespace
}  // namespace braid::test
