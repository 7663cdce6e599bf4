// Runs one rank's part of a scheduled program on concrete buffers: cuts each chunk into slices,
// issues device operations per queue and host operations to the worker pool in the global
// order, slice by slice, and waits until the rank's writes are done.
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
  std::vector<unsigned char*> staging;  // per NUMA index
  size_t staging_bytes = 0;             // per NUMA index
  size_t slice_bytes = 512 * 1024;
  void* scratch = nullptr;  // device scratch for staged REDUCE sources
  int scratch_slices = 4;
};

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

  // Runs the rank's instructions of `schedule` for one piece and waits for them. On a failed
  // wait returns RemoteError with *failure filled; the caller reports and aborts.
  Result run(const Schedule& schedule, const RunArgs& args, const WaitContext& ctx,
             RunFailure* failure);

 private:
  ExecutorConfig config_;
  // Staging ring for device reductions and the end-of-run signal (monotonic across runs; the
  // counters are config_.staged/consumed/finish).
  uint64_t staging_index_ = 0;
  uint64_t finish_index_ = 0;
  size_t next_worker_ = 0;
};

}  // namespace braid::engine
