// The multipath orchestrator of one NCCL communicator (HyLink's Multipath Orchestrator, FlexLink's
// split): each large collective is cut at an element offset every rank agrees on; the head goes
// to NCCL (NVLink) on one stream, the tail to braid's PCIe engine on another, both forked from
// and joined back to the caller's stream with events, timed per path with those events.
//
// Agreement: the split table is a replica on every rank, updated only with the per-path maximum
// over all ranks' times (exchanged through the engine's control segment), at the same call on
// every rank: a call's times are settled during the next split call, after that call's NCCL share
// is queued. Results: each element is computed by exactly one path, so integer results are exact and
// every rank gets bitwise the same data (both paths guarantee that on their own).
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdio>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "balance/split_table.h"
#include "braid/braid.h"
#include "common/result.h"
#include "multipath/nccl_entry_points.h"
#include "multipath/split_call.h"
#include "peer/peer_path.h"

namespace braid::multipath {

// A PreMulSum operator the application made on the NCCL communicator, as braid must remake it.
struct PreMulSumSpec {
  ncclDataType_t type = ncclFloat32;
  ncclScalarResidence_t residence = ncclScalarHostImmediate;
  unsigned char host_value[8] = {};  // ncclScalarHostImmediate: the scalar's bytes
  void* device_pointer = nullptr;    // ncclScalarDevice
};

// What one split call did, for the log and the JSON trace.
struct SplitRecord {
  uint64_t call = 0;
  SplitCall what;
  size_t bytes = 0;
  size_t nccl_elements = 0;  // the NVLink share: NCCL's, or the copy engines' when nvlink_copy
  bool nvlink_copy = false;
  size_t pcie_elements = 0;
  double nccl_seconds = 0;  // slowest rank's
  double pcie_seconds = 0;
  double next_pcie_share = 0;
};

class Orchestrator {
 public:
  // Collective over the NCCL communicator's ranks (all call it at the same point).
  static Result create(ncclComm_t comm, const NcclEntryPoints& nccl, std::unique_ptr<Orchestrator>* out);
  ~Orchestrator();
  Orchestrator(const Orchestrator&) = delete;
  Orchestrator& operator=(const Orchestrator&) = delete;

  int rank() const { return rank_; }
  int nranks() const { return nranks_; }
  // Split calls made so far (SplitRecord::call of the latest).
  uint64_t calls() const { return calls_; }

  // Whether `call` is split (otherwise the caller gives it to NCCL alone).
  bool wants(const SplitCall& call) const;
  // Splits `call` across both paths on `stream`. Blocks until braid's host part is done.
  Result run(const SplitCall& call, cudaStream_t stream);

  // Replaces the split table with a fresh one over `balancer` (tools compare balancers). Every
  // rank must do the same at the same point.
  void use_balancer(std::unique_ptr<balance::Balancer> balancer);

  // Stops braid's waits on every rank (within a second); any thread may call it.
  void abort();

  void add_premulsum(ncclRedOp_t op, const PreMulSumSpec& spec);
  void remove_premulsum(ncclRedOp_t op);

  // The splits settled so far (kept when a trace is asked for: BRAID_SPLIT_TRACE or tests).
  const std::vector<SplitRecord>& history() const { return history_; }
  void keep_history(bool keep) { keep_history_ = keep; }

 private:
  struct Timing {
    cudaEvent_t fork = nullptr, nccl_end = nullptr, pcie_end = nullptr;
  };
  struct Pending {
    SplitRecord record;
    balance::Shares used;
    bool timed = false;  // both paths ran and were timed (else NCCL alone, untimed)
    int timing = 0;      // index into timings_
  };

  Orchestrator() = default;
  Result nccl_share(const SplitCall& call, size_t elements);
  // The NVLink share on braid's copy-engine path (BRAID_NVLINK_PATH) when it carries this call:
  // *carried says whether it did (else NCCL moves the share).
  Result peer_share(const SplitCall& call, size_t elements, cudaStream_t stream, bool* carried);
  // Whether braid's own NVLink path (src/peer) carries this call's NVLink share.
  bool rides_copy_engines(const SplitCall& call) const;
  Result nccl_share_copied(const SplitCall& call, size_t elements);
  Result nccl_whole(const SplitCall& call, cudaStream_t stream);
  Result pcie_share(const SplitCall& call, size_t begin, size_t elements);
  Result settle_one();
  Result settle_pending();
  Result braid_op(ncclRedOp_t op, ncclRedOp_t* out);
  Result cuda(cudaError_t e, const char* what);
  Result nccl_result(ncclResult_t r, const char* what);
  void trace(const SplitRecord& r);

  ncclComm_t comm_ = nullptr;
  NcclEntryPoints nccl_;
  braidComm_t braid_ = nullptr;
  int rank_ = 0, nranks_ = 1, device_ = 0;
  cudaStream_t nccl_stream_ = nullptr, pcie_stream_ = nullptr;
  std::vector<Timing> timings_;
  bool copy_based_ = false;  // BRAID_SPLIT_NCCL_SHARE=copy
  std::unique_ptr<peer::PeerPath> peer_;  // BRAID_NVLINK_PATH=copy or auto (AllGather)
  bool peer_refused_logged_ = false;
  bool last_share_copied_ = false;  // the latest NVLink share went over the copy engines
  void* scratch_ = nullptr;  // the packed heads of the copy-based NCCL share
  size_t scratch_bytes_ = 0;
  int next_timing_ = 0;
  std::deque<Pending> pending_;
  std::unique_ptr<balance::SplitTable> table_;
  uint64_t calls_ = 0;
  std::map<ncclRedOp_t, PreMulSumSpec> premulsum_;
  std::map<ncclRedOp_t, ncclRedOp_t> braid_ops_;  // NCCL's dynamic op -> braid's
  bool keep_history_ = false;
  std::vector<SplitRecord> history_;
  std::FILE* trace_ = nullptr;
  Result failed_ = Result::Success;
  std::string failed_text_;
};

}  // namespace braid::multipath
