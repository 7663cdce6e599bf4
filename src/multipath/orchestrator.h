// The multipath orchestrator of one NCCL communicator (HyLink's Multipath Orchestrator, FlexLink's
// split): each large collective is cut at an element offset every rank agrees on; the head goes
// over NVLink (NCCL on the caller's stream, or braid's copy engines), the tail to braid's PCIe
// engine, whose queues fork from the caller's stream and join it again by events.
//
// Asynchronous like NCCL, and shaped like it: the calling thread queues every GPU operation of a
// call (the PCIe share's copies and reductions, gated on the GPU by a word the ranks' meeting
// raises; the NVLink share; the join) and hands the host half to the communicator's progress
// thread, which meets the other ranks, reduces on the host, writes host words and never queues GPU
// work (device/host_only_thread.h). The calling thread does not wait for the GPU, except when it
// runs more than BRAID_SPLIT_SETTLE_LAG split calls ahead of that thread, or before it maps a
// peer's new buffer for the copy engines; it waits for other ranks in the copy engines' meeting.
//
// Agreement: the split table is a replica on every rank, updated only with the per-path maximum
// over all ranks' times (exchanged by the progress threads through the engine's control segment,
// in call order), and call k's split uses exactly the times of calls up to k - lag on every rank.
// Results: each element is computed by exactly one path, so integer results are exact and
// every rank gets bitwise the same data (both paths guarantee that on their own).
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <atomic>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "balance/split_table.h"
#include "braid/braid.h"
#include "common/result.h"
#include "api/from_nccl.h"
#include "multipath/caller_profile.h"
#include "multipath/orchestrator_options.h"
#include "multipath/paths_admitted.h"
#include "engine/communicator.h"
#include "multipath/progress_lane.h"
#include "multipath/peer_share_path.h"
#include "multipath/share_path.h"
#include "multipath/split_call.h"
#include "multipath/split_ledger.h"
#include "multipath/split_trace.h"

namespace braid::multipath {

// A PreMulSum operator the application made on the NCCL communicator, as the drop-in records it
// for its argument checks (braid's paths leave PreMulSum calls to NCCL).
struct PreMulSumSpec {
  ncclDataType_t type = ncclFloat32;
  ncclScalarResidence_t residence = ncclScalarHostImmediate;
  unsigned char host_value[8] = {};  // ncclScalarHostImmediate: the scalar's bytes
  void* device_pointer = nullptr;    // ncclScalarDevice
};


// The progress thread's machinery is the ProgressLane's (CUDA-free, tested on CPU); the
// orchestrator gives it the GPU steps: the PCIe share on its stream, timing events, the completion word.
class Orchestrator : private LaneSteps {
 public:
  // Collective over the NCCL communicator's ranks (all call it at the same point). `admitted`: the
  // paths every rank agreed braid may use on `comm` (paths_admitted.h), so that braid makes only
  // what they need; null: decided here, every path that the ranks' processes allow. `agreed_by`:
  // the settings the paths were agreed by (null: read now).
  static Result create(ncclComm_t comm, const nccl::NcclCalls& nccl, std::unique_ptr<Orchestrator>* out,
                       const PathsAdmitted* admitted = nullptr, const OrchestratorOptions* agreed_by = nullptr);
  ~Orchestrator() override;
  Orchestrator(const Orchestrator&) = delete;
  Orchestrator& operator=(const Orchestrator&) = delete;

  int rank() const { return rank_; }
  int nranks() const { return nranks_; }
  // Split calls made so far (SplitRecord::call of the latest).
  uint64_t calls() const;

  // Whether one of the paths takes a call of this collective and size (the rest of the decision
  // is multipath::admit's, which the shim asks).
  bool takes(const nccl::Call& call) const;
  // Writes a call braid's paths take but that went to NCCL alone, and why, to the split trace
  // (BRAID_SPLIT_TRACE, rank 0's) as {"declined": reason, ...}; nothing without one. Any thread.
  void trace_declined(const nccl::Call& call, const char* reason);
  // Splits `call` across both paths on `stream`: returns once both shares are queued (braid's on
  // the progress thread) and `stream` waits for them. `entered`: when the application's call
  // reached braid (the caller's host time counts from there), else now.
  Result run(const nccl::Call& call, cudaStream_t stream, CallerProfile::Clock::time_point entered = {});
  // A call captured into a CUDA graph on `stream` (every rank's is): braid's NVLink path carries
  // all of it where it would carry the call's NVLink share outside graphs, queued so that every
  // replay runs it (*carried); otherwise nothing is queued and the caller hands the call to NCCL.
  // braid's PCIe share is driven from the host, which a replay cannot be. The copy engines'
  // meeting is at capture, on this thread; a replay meets on the GPU only.
  Result run_captured(const nccl::Call& call, cudaStream_t stream, bool* carried);
  // Waits until every split call so far has run, and applies all their times to the table (tools
  // read history() after). Every rank must drain at the same point, or later splits disagree.
  Result drain();

  // Replaces the split table with a fresh one over `balancer` (tools compare balancers). Every
  // rank must do the same at the same point.
  void use_balancer(std::unique_ptr<balance::Balancer> balancer);

  // Stops braid's waits on every rank (within a second); any thread may call it.
  void abort();
  // The first failure of braid's share on this communicator, with its text (Success: none). Any
  // thread may ask (ncclCommGetAsyncError).
  Result failure(std::string* text) const;


  // The splits settled so far (kept when asked for: tools and tests; drain() first for all of them).
  const std::vector<SplitRecord>& history() const { return history_; }
  void keep_history(bool keep) { keep_history_ = keep; }

 private:
  // What the calling thread still writes once a call's host half is handed on (the lane may drop a
  // failed job while that thread issues): shared, so that it outlives whichever lets go last.
  struct CallerPart {
    engine::QueuedCollective queued;  // the PCIe share, planned then issued by the calling thread
    bool nvlink_copy = false;         // the copy engines carried the NVLink share
    double caller_seconds = 0;        // the calling thread's time in the call
  };
  // One split call, as the progress thread gets it: its host half.
  struct Job final : LaneJob {
    SplitRecord record;
    bool pcie() const { return ledger.pcie_elements > 0; }  // braid's PCIe share runs
    bool timed() const { return ledger.timed; }             // and both paths are timed
    ShareCall share;
    std::shared_ptr<CallerPart> caller = std::make_shared<CallerPart>();
  };
  Orchestrator() = default;
  // Whether braid's own NVLink path (src/peer) carries this call's NVLink share: it can, and no
  // call applied so far found a buffer it could not share (the same answer on every rank).
  bool rides_copy_engines(const nccl::Call& call) const;
  // Makes braid's engine for the PCIe share (staging, workers, device scratch), every rank at the
  // same call; where some rank cannot, no rank keeps one and the ledger keeps every call on NVLink.
  // An error only where NCCL itself failed the ranks' agreement.
  Result make_pcie_engine();
  // The INIT line of what `comm`'s engine holds.
  void say_footprint(braidComm_t comm, const char* what) const;
  // failure()'s error for a new call ("braid's PCIe path failed earlier"), or Success.
  Result refuse_after_failure() const;
  // And the call is large enough for it (BRAID_NVLINK_COPY_MIN_BYTES, BRAID_NVLINK_ALLREDUCE_MIN_BYTES).
  bool copy_engines_take(const nccl::Call& call) const;
  // Writes `call` into stamp `which` when `stream` passes this point (timed calls).
  Result stamp(cudaStream_t stream, int which, uint64_t call);

  // The progress lane's steps, on its thread (or the caller's, BRAID_ASYNC=0): host work only.
  Result run_share(LaneJob& job, std::vector<double>* seconds) override;
  void release_waiters() override;  // releases the device work queued for calls that will not run
  void abort_transfers() override;
  void release_stuck() override;    // host stores only: the lane's thread is stuck
  std::string device_state() const override;  // the copy engines' signals of every rank
  // The NVLink share on the caller's stream, on the calling thread: braid's copy engines where
  // `record` says so (their meeting here; NCCL where a rank's buffer cannot be shared), else NCCL.
  Result caller_nvlink_share(const ShareCall& share, ShareRange range, cudaStream_t stream, bool* nvlink_copy);
  // The copy engines' share queued from the calling thread (`captured`: into the graph being
  // captured on `stream`): this rank's buffers published, the meeting, a peer's new allocation
  // mapped, and the share queued.
  Result caller_copy_share(const ShareCall& share, ShareRange range, cudaStream_t stream, bool captured,
                           peer::PeerPath::Outcome* outcome);

  // The calling thread: applies settled calls to the table, in call order, through `call`
  // (waiting for each); beyond the lag only when every rank does the same at the same call
  // (drain, destroy).
  Result apply_settled(uint64_t call, bool beyond_lag = false);
  // Logs, traces and keeps (history) one applied call.
  void record_applied(LaneJob& job, const std::vector<double>& seconds, double next_share);
  Result cuda(cudaError_t e, const char* what);

  ncclComm_t comm_ = nullptr;
  nccl::NcclCalls nccl_;
  OrchestratorOptions options_;  // read once, in create()
  braidComm_t braid_ = nullptr;  // the copy engines' meetings and signals, the ranks' facts
  // braid's PCIe share's engine: made by the calling thread at the first call with a PCIe share,
  // read by the progress thread (its jobs come after) and by abort() from any thread.
  std::atomic<braidComm_t> pcie_{nullptr};
  int rank_ = 0, nranks_ = 1, device_ = 0;
  // NVLink's paths, behind one interface: braid's copy engines where BRAID_NVLINK_PATH made them;
  // NCCL, which carries anything, on the caller's stream.
  std::unique_ptr<PeerSharePath> copy_engines_;
  std::unique_ptr<SharePath> nccl_path_;
  std::atomic<bool> aborted_{false};
  bool copy_refused_logged_ = false;
  bool said_pcie_share_ = false;  // the INFO line of the first call with a PCIe share
  // The calling thread's: the table, the calls made, what was settled.
  std::unique_ptr<SplitLedger> ledger_;  // the split table replica, calls issued and applied
  bool keep_history_ = false;
  std::vector<SplitRecord> history_;
  SplitTrace trace_;  // BRAID_SPLIT_TRACE, rank 0's

  // Between the calling thread and the progress thread (BRAID_ASYNC=0: no thread).
  std::unique_ptr<ProgressLane> lane_;
  std::unique_ptr<CallerProfile> profile_;  // BRAID_CALLER_PROFILE: the calling thread's split calls
  // The profile's phase `phase` ends here (BRAID_CALLER_PROFILE; nothing without it).
  void mark(CallerProfile::Phase phase) {
    if (profile_ != nullptr) profile_->mark(phase);
  }
  // Where timed calls' paths ended, written by the caller's stream (stamp()) and read by the
  // progress thread: pinned, mapped host memory.
  static constexpr int kForkStamp = 0, kNvlinkStamp = 1, kStamps = 2;
  std::atomic<uint64_t>* stamps_ = nullptr;
  unsigned long long stamps_device_ = 0;
};

}  // namespace braid::multipath
