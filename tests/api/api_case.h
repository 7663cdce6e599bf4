// One collective through braid's C API on device buffers, as one rank runs it: inputs uploaded
// on the user stream (no host synchronisation before the call, so the call must order itself
// after them), the result downloaded on the same stream (so the stream must wait for braid),
// then checked element by element against the shared reference (tests/support).
#pragma once

#include <cuda_runtime.h>

#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>
#include <algorithm>

#include "braid/braid.h"
#include "support/case.h"
#include "support/check.h"
#include "support/reference.h"

namespace braid::apitest {

using test::Case;
using test::full_matrix;
using test::outputs_identical;

// Splits [0, n) over a few threads when n is large (the host reference dominates test time).
template <typename Fn>
void parallel_chunks(size_t n, Fn fn) {
  const size_t threads = n < (size_t{1} << 17) ? 1 : std::min<size_t>(8, std::max(1u, std::thread::hardware_concurrency() / 2));
  if (threads == 1) {
    fn(size_t{0}, n, size_t{0});
    return;
  }
  std::vector<std::thread> pool;
  for (size_t t = 0; t < threads; ++t)
    pool.emplace_back([&, t] { fn(n * t / threads, n * (t + 1) / threads, t); });
  for (auto& th : pool) th.join();
}

// The entry points a runner drives: braid's C API, or NCCL's (through the drop-in, whose
// multipath split must give the same answers). The signatures are the same but for the comm.
template <typename CommT>
struct CollectiveApi {
  ncclResult_t (*all_reduce)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, CommT, cudaStream_t);
  ncclResult_t (*all_gather)(const void*, void*, size_t, ncclDataType_t, CommT, cudaStream_t);
  ncclResult_t (*reduce_scatter)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, CommT, cudaStream_t);
  ncclResult_t (*broadcast)(const void*, void*, size_t, ncclDataType_t, int, CommT, cudaStream_t);
  ncclResult_t (*reduce)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, int, CommT, cudaStream_t);
  ncclResult_t (*all_to_all)(const void*, void*, size_t, ncclDataType_t, CommT, cudaStream_t);
  ncclResult_t (*premulsum_create)(ncclRedOp_t*, void*, ncclDataType_t, ncclScalarResidence_t, CommT);
  ncclResult_t (*premulsum_destroy)(ncclRedOp_t, CommT);
  const char* (*error_string)(ncclResult_t);
  const char* (*last_error)(CommT);
};

inline CollectiveApi<braidComm_t> braid_collectives() {
  return {braidAllReduce, braidAllGather, braidReduceScatter, braidBroadcast, braidReduce, braidAllToAll,
          braidRedOpCreatePreMulSum, braidRedOpDestroy, braidGetErrorString, braidGetLastError};
}

inline CollectiveApi<ncclComm_t> nccl_collectives() {
  return {ncclAllReduce, ncclAllGather, ncclReduceScatter, ncclBroadcast, ncclReduce, ncclAlltoAll,
          ncclRedOpCreatePreMulSum, ncclRedOpDestroy, ncclGetErrorString, ncclGetLastError};
}

// One rank's communicator, stream and reusable buffers.
template <typename CommT>
class BasicRankRunner {
 public:
  BasicRankRunner(CommT comm, int rank, int ranks, size_t max_elements_per_block, CollectiveApi<CommT> api)
      : api_(api), comm_(comm), rank_(rank), ranks_(ranks) {
    capacity_ = max_elements_per_block * 8 * static_cast<size_t>(ranks) + 64;
    ok_ = cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking) == cudaSuccess &&
          cudaMalloc(&send_, capacity_) == cudaSuccess && cudaMalloc(&recv_, capacity_) == cudaSuccess;
  }
  ~BasicRankRunner() {
    cudaFree(scalar_dev_);
    cudaFree(send_);
    cudaFree(recv_);
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }
  bool ok() const { return ok_; }
  cudaStream_t stream() const { return stream_; }

  // Empty on success, else what went wrong. *hash: the output bytes' hash (0 without output).
  std::string run(const Case& k, uint64_t* hash) {
    *hash = 0;
    const size_t es = datatype_size(k.type);
    const size_t n = k.count;
    const size_t in_elems = k.input_elements(ranks_);
    const size_t out_elems = k.output_elements(ranks_);
    unsigned char* drecv = static_cast<unsigned char*>(recv_);
    // Out of place, the buffers NCCL ignores are null, to prove braid ignores them too.
    const test::Buffers b = test::place(k, rank_, static_cast<unsigned char*>(send_), drecv);
    unsigned char* send = b.send;
    unsigned char* recv = b.recv;
    if (cudaMemsetAsync(drecv, 0x5A, capacity_, stream_) != cudaSuccess) return "cudaMemsetAsync failed";
    host_.resize(std::max(in_elems, out_elems) * es + 8);
    if (send != nullptr && in_elems > 0) {
      parallel_chunks(in_elems, [&](size_t begin, size_t end, size_t) {
        for (size_t j = begin; j < end; ++j) test::write_input(k.type, k.value_op(), rank_, j, &host_[j * es]);
      });
      // Asynchronous on the user stream, not synchronised: braid must wait for it.
      if (cudaMemcpyAsync(send, host_.data(), in_elems * es, cudaMemcpyHostToDevice, stream_) != cudaSuccess)
        return "cudaMemcpyAsync (input) failed";
      // A pageable source is staged before cudaMemcpyAsync returns, so host_ may be reused;
      // the device copy itself may still be in flight when braid is called.
    }
    ncclRedOp_t op = static_cast<ncclRedOp_t>(k.op);
    const bool made_op = k.op == RedOp::PreMulSum && collective_reduces(k.collective);
    if (made_op) {
      std::string error = premul_op(k.type, &op);
      if (!error.empty()) return error;
    }
    const ncclDataType_t t = static_cast<ncclDataType_t>(k.type);
    ncclResult_t r = ncclSuccess;
    switch (k.collective) {
      case Collective::AllReduce: r = api_.all_reduce(send, recv, n, t, op, comm_, stream_); break;
      case Collective::AllGather: r = api_.all_gather(send, recv, n, t, comm_, stream_); break;
      case Collective::ReduceScatter: r = api_.reduce_scatter(send, recv, n, t, op, comm_, stream_); break;
      case Collective::Broadcast: r = api_.broadcast(send, recv, n, t, k.root, comm_, stream_); break;
      case Collective::Reduce: r = api_.reduce(send, recv, n, t, op, k.root, comm_, stream_); break;
      case Collective::AllToAll: r = api_.all_to_all(send, recv, n, t, comm_, stream_); break;
    }
    if (r != ncclSuccess)
      return k.text() + ": " + api_.error_string(r) + ": " + api_.last_error(comm_);
    // NCCL allows destroying an operator once the last call using it has returned.
    if (made_op && api_.premulsum_destroy(op, comm_) != ncclSuccess)
      return k.text() + ": RedOpDestroy: " + api_.last_error(comm_);
    if (!k.has_output(rank_) || out_elems == 0) return cudaStreamSynchronize(stream_) == cudaSuccess ? "" : "sync failed";
    std::vector<unsigned char> got(out_elems * es);
    // Ordered after the collective by the stream alone.
    if (cudaMemcpyAsync(got.data(), recv, got.size(), cudaMemcpyDeviceToHost, stream_) != cudaSuccess ||
        cudaStreamSynchronize(stream_) != cudaSuccess)
      return k.text() + ": downloading the result failed";
    return check(k, got, hash);
  }

 private:
  // This rank's PreMulSum operator for one call, made as nccl-tests makes it (and destroyed right
  // after the call, so op values get reused): the scalar differs by rank, and it is host-immediate
  // for even type ids and device-resident for odd ones.
  std::string premul_op(DataType type, ncclRedOp_t* op) {
    unsigned char scalar[8] = {};
    if (datatype_is_float(type)) {
      test::store_float(type, test::premul_scalar(type, rank_), scalar);
    } else {
      const uint64_t v = static_cast<uint64_t>(test::premul_scalar(type, rank_));
      std::memcpy(scalar, &v, datatype_size(type));
    }
    void* where = scalar;
    ncclScalarResidence_t residence = ncclScalarHostImmediate;
    if (static_cast<int>(type) % 2 == 1) {
      if (scalar_dev_ == nullptr && cudaMalloc(&scalar_dev_, sizeof scalar) != cudaSuccess)
        return "cudaMalloc (device scalar) failed";
      // Ordered before the call on the user stream, as an application would write it.
      if (cudaMemcpyAsync(scalar_dev_, scalar, sizeof scalar, cudaMemcpyHostToDevice, stream_) != cudaSuccess ||
          cudaStreamSynchronize(stream_) != cudaSuccess)
        return "writing the device scalar failed";
      where = scalar_dev_;
      residence = ncclScalarDevice;
    }
    const ncclResult_t r = api_.premulsum_create(op, where, static_cast<ncclDataType_t>(type), residence, comm_);
    if (r != ncclSuccess) return std::string("RedOpCreatePreMulSum: ") + api_.last_error(comm_);
    return "";
  }

  std::string check(const Case& k, const std::vector<unsigned char>& got, uint64_t* hash) const {
    const size_t out_elems = got.size() / datatype_size(k.type);
    // The first wrong element of each chunk; the smallest is reported.
    std::vector<std::string> first_error(16);
    parallel_chunks(out_elems, [&](size_t begin, size_t end, size_t chunk) {
      first_error[chunk] = check_range(k, got, begin, end);
    });
    for (const auto& e : first_error)
      if (!e.empty()) return e;
    *hash = test::fnv1a(got.data(), got.size());
    return "";
  }

  std::string check_range(const Case& k, const std::vector<unsigned char>& got, size_t begin, size_t end) const {
    const size_t es = datatype_size(k.type);
    for (size_t o = begin; o < end; ++o) {
      // The C API's tests have always demanded an exact float Avg at power-of-two rank counts.
      std::string error = test::check_element(k, rank_, ranks_, o, &got[o * es], test::AvgCheck::ExactAtPowersOfTwo);
      if (!error.empty()) return error;
    }
    return "";
  }

  CollectiveApi<CommT> api_;
  CommT comm_;
  int rank_, ranks_;
  size_t capacity_ = 0;
  bool ok_ = false;
  cudaStream_t stream_ = nullptr;
  void* send_ = nullptr;
  void* recv_ = nullptr;
  std::vector<unsigned char> host_;
  void* scalar_dev_ = nullptr;  // the device-resident PreMulSum scalar
};

using RankRunner = BasicRankRunner<braidComm_t>;

}  // namespace braid::apitest
