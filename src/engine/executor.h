// Runs one rank's part of a scheduled program on concrete buffers: cuts each chunk into slices and
// issues them in the global order, slice by slice. In two halves, so that the thread that owns the
// device's queues (the application's, as NCCL's calling thread) queues every device operation and
// a host thread does the rest: issue() queues the device operations, gated by the rank's go word;
// finish() hands the host operations to the worker pool and waits until the rank's writes are done.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/types.h"
#include "device/backend.h"
#include "engine/schedule.h"
#include "engine/watchdog.h"
#include "engine/worker_pool.h"
#include "reduce/reduce.h"

namespace braid::engine {

// A piece of a collective: the same program over elements [begin, begin+count) of every block,
// blocks being `block_stride` elements apart in the device buffers.
struct Piece {
  uint64_t block_stride = 0;
  uint64_t begin = 0;
  uint64_t count = 0;
};

struct RunArgs {
  const void* in = nullptr;
  void* out = nullptr;
  DataType type = DataType::Float32;
  RedOp op = RedOp::Sum;  // never Avg: the communicator resolves it
  const reduce::OpScalar* scalars = nullptr;  // PreMulSum: every rank's scalar, by rank
  uint64_t divide_by = 0;                    // integer Avg: divide final outputs (0: no)
  Piece piece;
  uint64_t seq = 0;  // monotonic per run: counters of this run hold seq<<32 + slices done

  // The scalar a raw input of `raw_rank` is multiplied by (null: none, or not PreMulSum).
  const reduce::OpScalar* scale_of(int raw_rank) const {
    return op == RedOp::PreMulSum && scalars != nullptr && raw_rank >= 0 ? &scalars[raw_rank] : nullptr;
  }
};

struct ExecutorConfig {
  int rank = 0;
  device::Backend* backend = nullptr;
  WorkerPool* pool = nullptr;
  std::atomic<uint64_t>* counters = nullptr;  // shared progress counters
  // This rank's staging-ring and end-of-run signals (in the control segment, registered with
  // the device: a GPU raises and waits on them).
  std::atomic<uint64_t>* staged = nullptr;
  std::atomic<uint64_t>* consumed = nullptr;
  std::atomic<uint64_t>* finish = nullptr;
  size_t counter_capacity = 0;
  const std::atomic<uint64_t>* abort_word = nullptr;  // the communicator's shared abort word
  std::vector<unsigned char*> staging;  // per NUMA index
  size_t staging_bytes = 0;             // per NUMA index
  size_t slice_bytes = 512 * 1024;
  void* scratch = nullptr;  // device scratch for staged REDUCE sources
  int scratch_slices = 4;
};

// What issue() queued that finish() must wait for besides the progress counters.
struct IssuedRun {
  uint64_t staging_index = 0;  // the device-reduction ring's position after the run (0: unused)
  uint64_t finish_target = 0;  // the signal raised after the outputs' scaling (0: no scaling)
};

// Whether a run's device work is queued yet (IssuedRun valid from kIssued on).
inline constexpr int kIssuePending = 0, kIssued = 1, kIssueFailed = 2;

// How a failed wait ended, for the communicator's error text.
struct RunFailure {
  WaitOutcome outcome = WaitOutcome::Done;
  int culprit = -1;  // the rank that did not deliver
};

class Executor {
 public:
  explicit Executor(ExecutorConfig config) : config_(std::move(config)) {}

  // Bytes of one host slot for a piece of `count` elements.
  static size_t slot_bytes(uint64_t count, int chunks, size_t element_size);

  // Queues the rank's device instructions of `schedule` for one piece, each queue first waiting
  // until `go` reaches args.seq (nothing of the run may touch staging before the ranks met), and
  // the scaling of PreMulSum / integer Avg outputs after them. Host work only: no waits. On a
  // failure the caller stops every rank (what was queued waits for signals that will not all come),
  // once it has recorded why.
  // PreMulSum's device-side scalars are args.scalars as the caller knows them then.
  Result issue(const Schedule& schedule, const RunArgs& args, std::atomic<uint64_t>* go, IssuedRun* issued);
  // Runs the rank's host instructions of the issued piece and waits for every write of the rank.
  // Never queues device work. On a failed wait returns RemoteError with *failure filled, raises the
  // abort word and aborts the backend (its queued waits are released).
  // `issue_state` (null: issued already): finish() may start while issue() still runs on another
  // thread; it reads `issued` only once the state says issue() ended (QueuedCollective's states).
  Result finish(const Schedule& schedule, const RunArgs& args, const IssuedRun& issued,
                const std::atomic<int>* issue_state, const WaitContext& ctx, RunFailure* failure);

 private:
  ExecutorConfig config_;
  // Staging ring for device reductions and the end-of-run signal (monotonic across runs; the
  // counters are config_.staged/consumed/finish): issue()'s.
  uint64_t staging_index_ = 0;
  uint64_t finish_index_ = 0;
  size_t next_worker_ = 0;  // finish()'s
};

}  // namespace braid::engine
