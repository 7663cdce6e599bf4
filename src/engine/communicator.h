// The engine's communicator: one per rank, made collectively by all ranks (threads or
// processes) from the same random CommId. Collectives follow NCCL's argument conventions and
// block until this rank's part is done.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <limits>
#include <span>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/types.h"
#include "device/backend.h"
#include "dsl/program.h"
#include "engine/control.h"
#include "engine/executor.h"
#include "engine/schedule.h"
#include "engine/shm.h"
#include "engine/watchdog.h"
#include "engine/worker_pool.h"
#include "reduce/reduce.h"
#include "topo/topology.h"

namespace braid::engine {

struct CommId {
  uint8_t bytes[16] = {};
  static CommId random();
  std::string hex() const;  // 32 lower-case hex digits
};

// Elements [begin, begin + count) of every block: the share of a collective split across paths.
struct BlockRange {
  static constexpr size_t kWhole = std::numeric_limits<size_t>::max();
  size_t begin = 0;
  size_t count = kWhole;  // kWhole: the whole block
};

// Bytes of /dev/shm a communicator's set-up allocates (at rank 0): its control segment and a
// staging segment of `staging_bytes` per NUMA node (0 NUMA nodes: meetings and signals only, a
// control segment without progress counters).
size_t shm_bytes_needed(int nranks, int numa_nodes, size_t staging_bytes);

// What a communicator is made for. Without the host path it holds only the control segment:
// meetings, exchanges and the path signals braid's NVLink path uses, and no staging, worker
// threads or device scratch (its collectives fail). Every rank must pass the same.
struct CommunicatorOptions {
  bool host_path = true;
};

// What queue() plans for a collective split in two halves (Communicator::queue, complete): reset
// whole for every call, so that no field keeps a value from the call before.
struct QueuedPlan {
  Collective collective = Collective::AllReduce;
  const void* send = nullptr;
  void* recv = nullptr;
  size_t count = 0;
  DataType type = DataType::Float32;
  RedOp op = RedOp::Sum;  // as called
  int root = 0;
  BlockRange range;
  bool moves = false;  // anything to do (a count or range of 0 moves nothing)
  bool in_place = false;
  RedOp run_op = RedOp::Sum;  // Avg resolved
  bool scaled = false;        // run_op is PreMulSum: own_scalar, and every rank's in scalars
  reduce::OpScalar own_scalar;
  std::vector<reduce::OpScalar> scalars;
  uint64_t divide_by = 0;
  const Schedule* schedule = nullptr;
  struct Run {
    RunArgs args;
    IssuedRun issued;
  };
  std::vector<Run> runs;  // one per piece
};

// A collective split in two halves, as queue() fills it and complete() finishes it.
struct QueuedCollective : QueuedPlan {
  // Set by issue() once every run's device work is queued (kIssued) or could not be (kIssueFailed);
  // complete() reads `issued` only after it.
  std::atomic<int> issue_state{kIssuePending};

  QueuedCollective() = default;
  QueuedCollective(const QueuedCollective&) = delete;
  QueuedCollective& operator=(const QueuedCollective&) = delete;
};

class Communicator {
 public:
  // Collective over all `nranks` ranks: each calls create with the same id. `backend` stays
  // owned by the caller and must outlive the communicator.
  static Result create(const CommId& id, int rank, int nranks, const topo::Topology& topology,
                       device::Backend* backend, std::unique_ptr<Communicator>* out,
                       CommunicatorOptions options = {});
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const { return rank_; }
  int nranks() const { return nranks_; }
  const topo::Topology& topology() const { return topology_; }

  // What this communicator holds: pinned (registered) host memory, device memory and threads.
  struct Footprint {
    size_t pinned_bytes = 0;
    size_t device_bytes = 0;
    int threads = 0;
  };
  Footprint footprint() const;

  // NCCL conventions: counts are per rank (AllReduce, Broadcast, Reduce), the send count
  // (AllGather), the receive count (ReduceScatter), the count per peer (AllToAll). `scalar` is
  // PreMulSum's (required for it, ignored otherwise).
  Result all_reduce(const void* send, void* recv, size_t count, DataType type, RedOp op,
                    const reduce::OpScalar* scalar = nullptr);
  Result all_gather(const void* send, void* recv, size_t send_count, DataType type);
  Result reduce_scatter(const void* send, void* recv, size_t recv_count, DataType type, RedOp op,
                        const reduce::OpScalar* scalar = nullptr);
  Result broadcast(const void* send, void* recv, size_t count, DataType type, int root);
  Result reduce(const void* send, void* recv, size_t count, DataType type, RedOp op, int root,
                const reduce::OpScalar* scalar = nullptr);
  Result all_to_all(const void* send, void* recv, size_t count, DataType type);

  using Range = BlockRange;
  static constexpr size_t kWholeBlock = BlockRange::kWhole;

  // A collective in two halves, for callers that must not queue device work from a host thread
  // (the drop-in's split calls, as NCCL's calling thread queues a call's kernels and its proxy
  // thread touches no stream). queue() runs on the thread that owns the device's queues: it
  // queues this rank's device operations of `range` of every block, each queue first waiting for
  // the ranks' meeting, and returns without waiting for anything. complete() runs on a host thread,
  // in queue order: it meets the other ranks, runs the host work, waits for this rank's part and
  // never queues device work; on failure it releases the queued operations and the communicator
  // is unusable. join_queued() orders the backend's user stream after what was queued. PreMulSum
  // cannot be queued (device-side scaling needs every rank's scalar): InvalidUsage.
  //
  // queue() is plan() then issue(). A caller that hands the host half to another thread does so
  // between them: from issue()'s first operation the device waits for the ranks' meeting, so the
  // meeting must not wait for anything this thread does later (it may be blocked meanwhile behind
  // an application thread that holds CUDA's lock and waits for the device). plan() makes no
  // device call; complete() may start before issue() ends and waits for it only at its end.
  Result queue(Collective c, const void* send, void* recv, size_t count, DataType type, RedOp op, int root,
               Range range, QueuedCollective* out);
  Result plan(Collective c, const void* send, void* recv, size_t count, DataType type, RedOp op, int root,
              Range range, QueuedCollective* out);
  Result issue(QueuedCollective& queued);
  Result join_queued() { return backend_->end_collective(); }
  // `on_look`: called at every look of complete()'s waits, on its thread (WaitContext::on_look).
  Result complete(QueuedCollective& queued, std::function<void()> on_look = {});
  // The collective (arguments as above) over `range` of every block; the rest of the receive
  // buffer is left as it was. Every rank passes the same range.
  Result collective_range(Collective c, const void* send, void* recv, size_t count, DataType type,
                          RedOp op, int root, const reduce::OpScalar* scalar, Range range);

  // All ranks publish `mine` (at most kExchangeSlots values, the same number on every rank) and
  // get every rank's, rank-major, in `all`. A host-only meeting through the control segment.
  Result exchange(std::span<const uint64_t> mine, std::vector<uint64_t>* all) {
    return exchange(Meeting::Engine, mine, all);
  }
  // Two meetings that never pair with each other: each has its own sequence, so one thread may
  // meet on one while another meets on the other (one thread per meeting at a time). Engine: the
  // engine's collectives and the exchanges of whoever drives them (braid's progress thread);
  // Path: a path's per-call meeting on the calling thread (braid's copy engines).
  enum class Meeting { Engine, Path };
  Result exchange(Meeting meeting, std::span<const uint64_t> mine, std::vector<uint64_t>* all);

  // A rank's path signal `index` (< kPathSignals) in the registered control segment, for the
  // paths layered above the engine (src/peer), which wait on them with stream memory operations.
  std::atomic<uint64_t>* path_signal(int rank, int index) {
    return &rank_records(control_.data())[rank].path_signals[index].value;
  }
  // Raises every path signal of `rank` past any value a stream waits for (host stores only), so
  // that streams parked on them go on: a path that fails or aborts releases its peers' streams.
  void release_path_signals(int rank) {
    for (int s = 0; s < kPathSignals; ++s) path_signal(rank, s)->store(~0ull >> 1);
  }

  // Whether some rank aborted this communicator (its shared abort word is set): paths layered above
  // the engine (src/peer) report their queued work as failed then.
  bool aborted() const { return control_header(control_.data())->abort.load() != 0; }

  // Runs a given program (must pass dsl::validate for the in-place mode the pointers imply);
  // for tests and tools. All ranks pass the same program.
  Result run_program(const dsl::Program& program, const void* send, void* recv, size_t count,
                     DataType type, RedOp op = RedOp::Sum,
                     const reduce::OpScalar* scalar = nullptr);

  // Stops every wait of this communicator on every rank (within a second); later calls fail.
  void abort();

  // The names of the shared segments (for tests: they must be gone from /dev/shm).
  std::vector<std::string> segment_names() const;

 private:
  Communicator() = default;
  Result collective(Collective c, const void* send, void* recv, size_t count, DataType type,
                    RedOp op, int root, const reduce::OpScalar* scalar,
                    const dsl::Program* program, Range range = BlockRange{});
  // The steps of a collective: check and resolve the call; publish it and meet the ranks (every
  // rank's in-place flags and scalars); plan its schedule and queue its device work; run its host
  // work.
  Result prepare(Collective c, const void* send, void* recv, size_t count, DataType type, RedOp op, int root,
                 const reduce::OpScalar* scalar, const dsl::Program* program, Range range, QueuedCollective* q);
  Result meet(QueuedCollective& q, const WaitContext& ctx, std::vector<bool>* in_place_flags);
  Result plan_runs(QueuedCollective& q, const std::vector<bool>& in_place_flags, const dsl::Program* program);
  Result issue_runs(QueuedCollective& q);
  Result run_host_part(QueuedCollective& q, WaitContext& ctx);
  Result check_arguments(Collective c, const void* send, void* recv, size_t count, int type,
                         int op, int root, const reduce::OpScalar* scalar);
  // A wait bounded by BRAID_TIMEOUT, the abort word and the peers' lives, starting now;
  // `dead_rank` receives a peer found dead.
  WaitContext wait_context(int* dead_rank) const;
  Result barrier(Collective c, const WaitContext& ctx);
  Result path_barrier(const WaitContext& ctx);
  // Raises this rank's `counter` to `k` and waits until every rank's is there (a barrier).
  Result arrive_and_wait(std::atomic<uint64_t> RankRecord::*counter, uint64_t k, Collective c, const WaitContext& ctx);
  Result report_failure(Collective c, const RunFailure& f, double waited);
  Result schedule_for(Collective c, int root, const std::vector<bool>& in_place, size_t bytes,
                      DataType type, const dsl::Program* given, const Schedule** out);
  std::string describe_rank(int rank) const;
  // Posts this rank's failure (its cause) in the control segment, then raises the abort word
  // naming it (if none is raised yet): the others then fail at once with that cause.
  void post_failure(int rank, const std::string& text);
  std::string failure_text(int rank) const;  // what `rank` posted; empty if nothing
  // Why the abort word is raised, for a wait it ended "during" something.
  std::string abort_text(const char* during) const;

  int rank_ = 0;
  int nranks_ = 1;
  topo::Topology topology_;
  device::Backend* backend_ = nullptr;
  std::string name_prefix_;
  SharedSegment control_;
  std::vector<SharedSegment> staging_;
  std::unique_ptr<WorkerPool> pool_;
  std::unique_ptr<Executor> executor_;
  std::vector<PeerProcess> peers_;  // other processes' ranks, for death checks
  uint64_t calls_ = 0;
  uint64_t barriers_ = 0;
  uint64_t runs_ = 0;
  uint64_t exchanges_ = 0;
  uint64_t path_barriers_ = 0, path_exchanges_ = 0;  // Meeting::Path's own sequence
  size_t staging_bytes_ = 0;
  size_t slice_bytes_ = 0;
  // The first failure that made this communicator unusable; both meetings' threads may set it.
  mutable std::mutex failed_mutex_;
  Result failed_ = Result::Success;
  std::string failed_text_;
  void record_failed(Result r, const std::string& text);
  // This rank's failure `r` (last_error() its text) in a split collective: the abort word raised
  // naming this rank, the backend's queued waits released, the communicator unusable.
  void stop_every_rank(Result r);
  Result check_usable() const;  // fails with the recorded failure, if any
  // Schedules of generated programs, per (collective, root, in-place flags, size class, type).
  std::map<std::string, std::unique_ptr<Schedule>> cache_;
  std::unique_ptr<Schedule> given_schedule_;  // the last run_program's
};

}  // namespace braid::engine
