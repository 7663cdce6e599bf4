// The two implementations braid-bench compares on the same buffers: braid's C API (one
// communicator per GPU, ranks as threads) and NCCL (ncclCommInitAll, one thread issuing every
// GPU's call inside ncclGroupStart/End). Both run on their own stream per GPU.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <map>
#include <vector>

#include "braid/braid.h"
#include "common/types.h"
#include "rank_threads.h"
#include "shape.h"

namespace braid::bench {

// One row's collective: what every rank calls.
struct CaseSpec {
  Collective collective = Collective::AllReduce;
  DataType type = DataType::Float32;
  RedOp op = RedOp::Sum;
  int root = 0;
  bool in_place = false;
  Shape shape;
};

class BraidPath {
 public:
  // Creates one communicator per rank thread (collectively).
  explicit BraidPath(RankThreads& threads);
  ~BraidPath();
  BraidPath(const BraidPath&) = delete;
  BraidPath& operator=(const BraidPath&) = delete;

  // Makes the PreMulSum ops for `type` (from the main thread, before the rank threads use them).
  void prepare(DataType type);
  // Rank `rank`'s call (from its thread); returns when braid's host part is done.
  void issue(int rank, const CaseSpec& spec, const void* send, void* recv);
  cudaStream_t stream(int rank) const { return streams_[rank]; }

 private:
  ncclRedOp_t op_for(int rank, const CaseSpec& spec) const;

  RankThreads& threads_;
  std::vector<braidComm_t> comms_;
  std::vector<cudaStream_t> streams_;
  std::map<int, std::vector<ncclRedOp_t>> premulsum_;  // per data type, per rank
};

class NcclPath {
 public:
  explicit NcclPath(const std::vector<int>& devices);
  ~NcclPath();
  NcclPath(const NcclPath&) = delete;
  NcclPath& operator=(const NcclPath&) = delete;

  void prepare(DataType type);
  // Every rank's call in one group (from the calling thread).
  void issue_all(const CaseSpec& spec, const std::vector<const void*>& send,
                 const std::vector<void*>& recv);
  void synchronize();
  cudaStream_t stream(int rank) const { return streams_[rank]; }

 private:
  std::vector<int> devices_;
  std::vector<ncclComm_t> comms_;
  std::vector<cudaStream_t> streams_;
  std::map<int, std::vector<ncclRedOp_t>> premulsum_;
};

}  // namespace braid::bench
