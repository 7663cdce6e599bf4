// The implementations braid-bench compares on the same buffers: braid (one communicator per GPU,
// ranks as threads) as its PCIe path alone (the C API) or as the drop-in runs it, every large
// collective split across NCCL and the PCIe path (--multipath: the orchestrator over its own NCCL
// communicators); and NCCL alone (ncclCommInitAll, each rank's call from its own thread, as braid's;
// one thread issuing every GPU's call inside ncclGroupStart/End for the interference measurement).
// Each runs on its own stream per GPU.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <map>
#include <vector>

#include "braid/braid.h"
#include "common/types.h"
#include "multipath/orchestrator.h"
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
  // Creates one communicator per rank thread (collectively); with `multipath`, NCCL
  // communicators and an orchestrator over each.
  BraidPath(RankThreads& threads, const std::vector<int>& devices, bool multipath);
  ~BraidPath();
  BraidPath(const BraidPath&) = delete;
  BraidPath& operator=(const BraidPath&) = delete;

  // Makes the PreMulSum ops for `type` (from the main thread, before the rank threads use them).
  void prepare(DataType type);
  // Rank `rank`'s call (from its thread); returns when braid's host part is done.
  void issue(int rank, const CaseSpec& spec, const void* send, void* recv);
  cudaStream_t stream(int rank) const { return streams_[rank]; }
  bool multipath() const { return !orchestrators_.empty(); }
  // Every orchestrator switches to a static split with this PCIe share (multipath only).
  void use_static_share(double share);
  // Rank 0's split calls so far (multipath only).
  uint64_t split_calls() const { return multipath() ? orchestrators_[0]->calls() : 0; }
  // Rank 0's settled splits since the last call (multipath only).
  std::vector<multipath::SplitRecord> take_splits();

 private:
  ncclRedOp_t op_for(int rank, const CaseSpec& spec) const;
  void issue_multipath(int rank, const CaseSpec& spec, const void* send, void* recv);

  RankThreads& threads_;
  std::vector<braidComm_t> comms_;
  std::vector<ncclComm_t> nccl_comms_;
  std::vector<std::unique_ptr<multipath::Orchestrator>> orchestrators_;
  size_t splits_taken_ = 0;
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
  // One rank's call, from that rank's thread (the benchmark's NCCL column).
  void issue(int rank, const CaseSpec& spec, const void* send, void* recv);
  // Every rank's call in one group (from the calling thread: the interference measurement).
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
