#include "engine/executor.h"

#include <algorithm>
#include <cstring>

#include "common/log.h"
#include "engine/control.h"
#include "engine/faults.h"

namespace braid::engine {
namespace {

using dsl::Buffer;
using dsl::Location;
using dsl::Opcode;

// Everything a slice needs, shared by the tasks of one run (alive until the pool is idle).
struct RunState {
  const Schedule* schedule = nullptr;
  RunArgs args;
  const ExecutorConfig* config = nullptr;
  WaitContext ctx;  // without peer checks (worker threads)
  std::atomic<uint64_t>* abort_word = nullptr;
  size_t element_size = 0;
  size_t slot_bytes = 0;
  uint64_t slice_elements = 1;
  uint64_t base = 0;  // seq << 32
  std::vector<uint64_t> part_elements;  // per part
  std::vector<uint32_t> slices;         // per position in the global order

  uint64_t size_of(int32_t pos) const { return part_elements[schedule->order[pos].part]; }

  // Element range of slice s within a chunk of `elements` elements.
  std::pair<uint64_t, uint64_t> slice_range(uint64_t elements, uint32_t s) const {
    const uint64_t begin = std::min<uint64_t>(elements, uint64_t{s} * slice_elements);
    const uint64_t end = std::min<uint64_t>(elements, begin + slice_elements);
    return {begin, end};
  }

  unsigned char* address(const Location& l, uint64_t element) const {
    if (l.is_host())
      return config->staging[l.numa] + static_cast<size_t>(l.index) * slot_bytes +
             element * element_size;
    const int chunks = schedule->chunks;
    const uint64_t block = static_cast<uint64_t>(l.index / chunks);
    const dsl::ElementRange part = dsl::chunk_elements(args.piece.count, chunks, l.index % chunks);
    const uint64_t e = block * args.piece.block_stride + args.piece.begin + part.begin + element;
    auto* base_ptr = static_cast<unsigned char*>(
        l.buffer == Buffer::Input ? const_cast<void*>(args.in) : args.out);
    return base_ptr + e * element_size;
  }

  // The counter value dependency `d` of instruction `pos` needs before slice s may run.
  // Every instruction maps element i of its chunk to element i of another chunk of the same
  // part, so slice s of anything depends only on slice s of the chunks before it. A dependency
  // on a writer of the same size is therefore gated per slice, whatever cell it names (its own
  // src/dst, or another cell it must follow, such as the upload of an input an in-place write
  // overwrites); only a writer of another size must be complete.
  bool per_slice(int32_t pos, const ResolvedDep& d) const { return size_of(d.writer) == size_of(pos); }
  uint64_t needed(int32_t pos, const ResolvedDep& d, uint32_t s) const {
    if (per_slice(pos, d)) return base + s + 1;
    return base + slices[d.writer];
  }
};

bool wait_deps(const RunState& st, int32_t pos, uint32_t s) {
  const auto& si = st.schedule->order[pos];
  for (const auto& d : si.deps) {
    const uint64_t value = st.needed(pos, d, s);
    std::atomic<uint64_t>& counter = st.config->counters[d.writer];
    if (counter.load(std::memory_order_acquire) >= value) continue;
    if (wait_until(st.ctx, [&] { return counter.load(std::memory_order_acquire) >= value; }) !=
        WaitOutcome::Done)
      return false;
  }
  return true;
}

// One slice of a host instruction (H2H or host REDUCE), run by a pool worker.
void run_host_slice(const RunState* st, int32_t pos, uint32_t s) {
  const auto& si = st->schedule->order[pos];
  if (!wait_deps(*st, pos, s)) return;
  const auto [begin, end] = st->slice_range(st->size_of(pos), s);
  const auto& in = si.instruction;
  unsigned char* dst = st->address(in.dst, begin);
  const unsigned char* src = st->address(in.src, begin);
  if (si.accumulate) {
    Result r = reduce::accumulate(st->args.type, st->args.op, dst, src, end - begin,
                                  st->args.scale_of(si.dst_raw_rank), st->args.scale_of(si.src_raw_rank));
    if (r != Result::Success) {
      uint64_t expected = 0;
      st->abort_word->compare_exchange_strong(
          expected, abort_word(AbortReason::LocalError, st->config->rank));
      return;
    }
  } else if (end > begin && dst != src) {
    std::memcpy(dst, src, (end - begin) * st->element_size);
  }
  // Publish in slice order: readers gate slice s on "counter >= base + s + 1".
  std::atomic<uint64_t>& mine = st->config->counters[pos];
  if (s > 0 && mine.load(std::memory_order_acquire) < st->base + s) {
    if (wait_until(st->ctx, [&] { return mine.load(std::memory_order_acquire) >= st->base + s; }) !=
        WaitOutcome::Done)
      return;
  }
  mine.store(st->base + s + 1, std::memory_order_release);
}

}  // namespace

size_t Executor::slot_bytes(uint64_t count, int chunks, size_t element_size) {
  const size_t raw = dsl::max_chunk_elements(count, chunks) * element_size;
  return (raw + 63) / 64 * 64;
}

namespace {

// The run's state shared by issue() and finish(): sizes per part and instruction, checked against
// the communicator's counters and staging.
Result prepare_state(const Schedule& schedule, const RunArgs& args, const ExecutorConfig& config, RunState* st) {
  st->schedule = &schedule;
  st->args = args;
  st->config = &config;
  st->element_size = datatype_size(args.type);
  st->slot_bytes = Executor::slot_bytes(args.piece.count, schedule.chunks, st->element_size);
  st->slice_elements = std::max<uint64_t>(1, config.slice_bytes / st->element_size);
  st->base = args.seq << 32;
  st->part_elements.resize(schedule.chunks);
  for (int p = 0; p < schedule.chunks; ++p)
    st->part_elements[p] = dsl::chunk_elements(args.piece.count, schedule.chunks, p).size();
  const int32_t total = static_cast<int32_t>(schedule.order.size());
  if (static_cast<size_t>(total) > config.counter_capacity)
    return fail(Result::InvalidUsage,
                "program has %d instructions but the communicator has %zu progress counters",
                total, config.counter_capacity);
  for (size_t n = 0; n < schedule.host_slots.size(); ++n) {
    if (schedule.host_slots[n] == 0) continue;
    if (n >= config.staging.size() ||
        static_cast<size_t>(schedule.host_slots[n]) * st->slot_bytes > config.staging_bytes)
      return fail(Result::InternalError,
                  "piece of %llu elements needs %d host slots of %zu bytes on NUMA %zu, more "
                  "than the staging there",
                  static_cast<unsigned long long>(args.piece.count), schedule.host_slots[n],
                  st->slot_bytes, n);
  }
  st->slices.resize(total);
  for (int32_t pos = 0; pos < total; ++pos) {
    const uint64_t e = st->size_of(pos);
    st->slices[pos] = static_cast<uint32_t>(std::max<uint64_t>(1, (e + st->slice_elements - 1) / st->slice_elements));
  }
  return Result::Success;
}

struct Task {
  uint32_t key;
  int32_t pos;
  uint32_t slice;
};

// Issue order: slice-major. Task (pos, s) gets the key max(s, level[pos]), where level[pos] is
// the latest slice "time" any of its dependencies forces it to wait for (a full-completion
// dependency on W waits for W's last slice). Every wait then targets a task with a smaller
// (key, pos) on some rank, and every FIFO (each device queue, each worker) is filled in (key, pos)
// order, so the earliest unfinished task can always run: no deadlock, whichever thread fills which
// FIFO. Slice-major lets a rank's first downloads go out before all its uploads are queued
// (measured on H200: instruction-major issue kept all_reduce downloads idle while uploads were
// being enqueued).
std::vector<Task> tasks_in_order(const RunState& st, int rank) {
  const Schedule& schedule = *st.schedule;
  const int32_t total = static_cast<int32_t>(schedule.order.size());
  std::vector<uint32_t> level(static_cast<size_t>(total), 0);
  for (int32_t pos = 0; pos < total; ++pos) {
    uint32_t f = 0;
    for (const auto& d : schedule.order[pos].deps) {
      f = std::max(f, st.per_slice(pos, d) ? level[d.writer] : std::max(level[d.writer], st.slices[d.writer] - 1));
    }
    level[pos] = f;
  }
  std::vector<Task> tasks;
  for (int32_t pos : schedule.rank_order[rank])
    for (uint32_t s = 0; s < st.slices[pos]; ++s) tasks.push_back({std::max(s, level[pos]), pos, s});
  std::sort(tasks.begin(), tasks.end(), [](const Task& a, const Task& b) {
    return a.key != b.key ? a.key < b.key : a.pos != b.pos ? a.pos < b.pos : a.slice < b.slice;
  });
  return tasks;
}

bool runs_on_host(const dsl::Instruction& in) {
  return in.op == Opcode::H2H || (in.op == Opcode::Reduce && in.dst.is_host());
}

}  // namespace

Result Executor::issue(const Schedule& schedule, const RunArgs& args, std::atomic<uint64_t>* go, IssuedRun* issued) {
  *issued = IssuedRun{};
  RunState st;
  BRAID_TRY(prepare_state(schedule, args, config_, &st));
  device::Backend& dev = *config_.backend;
  const int rank = config_.rank;
  const size_t scratch_slice_bytes = st.slice_elements * st.element_size;
  auto signal = [&](int32_t pos, uint32_t s) {
    return device::Signal{&config_.counters[pos], st.base + s + 1};
  };
  // Each queue waits for the ranks' meeting once, before its first operation of the run.
  bool gated[device::kNumQueues] = {};
  auto gate = [&](int queue) -> Result {
    if (go == nullptr || gated[queue]) return Result::Success;
    gated[queue] = true;
    return dev.wait(queue, device::Signal{go, args.seq});
  };
  auto enqueue_waits = [&](int queue, int32_t pos, uint32_t s) -> Result {
    BRAID_TRY(gate(queue));
    for (const auto& d : schedule.order[pos].deps)
      BRAID_TRY(dev.wait(queue, device::Signal{&config_.counters[d.writer], st.needed(pos, d, s)}));
    return Result::Success;
  };

  Result result = Result::Success;
  for (const Task& task : tasks_in_order(st, rank)) {
    const int32_t pos = task.pos;
    const uint32_t s = task.slice;
    const auto& si = schedule.order[pos];
    const auto& in = si.instruction;
    if (runs_on_host(in)) continue;
    const auto [begin, end] = st.slice_range(st.size_of(pos), s);
    const size_t bytes = (end - begin) * st.element_size;
    auto queue_one = [&]() -> Result {
      switch (in.op) {
        case Opcode::D2H:
          if (fault_injected(FaultStep::D2H, rank)) return injected_failure(FaultStep::D2H, rank);
          BRAID_TRY(enqueue_waits(device::kQueueD2H, pos, s));
          return dev.d2h(device::kQueueD2H, st.address(in.dst, begin), st.address(in.src, begin), bytes, signal(pos, s));
        case Opcode::H2D:
          if (fault_injected(FaultStep::H2D, rank)) return injected_failure(FaultStep::H2D, rank);
          BRAID_TRY(enqueue_waits(device::kQueueH2D, pos, s));
          return dev.h2d(device::kQueueH2D, st.address(in.dst, begin), st.address(in.src, begin), bytes, signal(pos, s));
        case Opcode::Copy:
          if (fault_injected(FaultStep::Copy, rank)) return injected_failure(FaultStep::Copy, rank);
          BRAID_TRY(enqueue_waits(device::kQueueCompute, pos, s));
          return dev.copy(device::kQueueCompute, st.address(in.dst, begin), st.address(in.src, begin), bytes,
                          signal(pos, s));
        case Opcode::Reduce: {
          if (fault_injected(FaultStep::Reduce, rank)) return injected_failure(FaultStep::Reduce, rank);
          // Device reduction: stage the host source into a scratch ring slot, then reduce.
          const uint64_t g = staging_index_++;
          const uint64_t k = static_cast<uint64_t>(config_.scratch_slices);
          unsigned char* slot = static_cast<unsigned char*>(config_.scratch) + (g % k) * scratch_slice_bytes;
          BRAID_TRY(gate(device::kQueueH2D));
          BRAID_TRY(gate(device::kQueueCompute));
          if (g >= k) BRAID_TRY(dev.wait(device::kQueueH2D, {config_.consumed, g + 1 - k}));
          BRAID_TRY(enqueue_waits(device::kQueueH2D, pos, s));
          BRAID_TRY(dev.h2d(device::kQueueH2D, slot, st.address(in.src, begin), bytes, {config_.staged, g + 1}));
          BRAID_TRY(dev.wait(device::kQueueCompute, {config_.staged, g + 1}));
          BRAID_TRY(dev.reduce(device::kQueueCompute, args.type, args.op, st.address(in.dst, begin), slot, end - begin,
                               args.scale_of(si.dst_raw_rank), args.scale_of(si.src_raw_rank), signal(pos, s)));
          return dev.raise(device::kQueueCompute, {config_.consumed, g + 1});
        }
        case Opcode::H2H:
          break;
      }
      return Result::Success;
    };
    result = queue_one();
    if (result != Result::Success) break;
  }
  issued->staging_index = staging_index_;

  // PreMulSum / integer Avg outputs, once every write of this rank is done (an output may still
  // be read after its last write, to be forwarded).
  bool scaling = false;
  for (const auto& f : schedule.final_outputs[rank])
    scaling |= args.scale_of(f.raw_rank) != nullptr || args.divide_by != 0;
  if (result == Result::Success && scaling) {
    result = gate(device::kQueueCompute);
    for (int32_t pos : schedule.rank_order[rank]) {
      if (result != Result::Success) break;
      result = dev.wait(device::kQueueCompute, device::Signal{&config_.counters[pos], st.base + st.slices[pos]});
    }
    for (const auto& f : schedule.final_outputs[rank]) {
      if (result != Result::Success) break;
      const reduce::OpScalar* raw_scale = args.scale_of(f.raw_rank);
      if (raw_scale == nullptr && args.divide_by == 0) continue;
      void* p = st.address(Location{Buffer::Output, 0, f.chunk}, 0);
      const uint64_t n = st.part_elements[f.chunk % schedule.chunks];
      if (raw_scale != nullptr) result = dev.scale(device::kQueueCompute, args.type, p, p, n, *raw_scale, {});
      if (result == Result::Success && args.divide_by != 0)
        result = dev.divide(device::kQueueCompute, args.type, p, n, args.divide_by, {});
    }
    if (result == Result::Success) {
      issued->finish_target = ++finish_index_;
      result = dev.raise(device::kQueueCompute, {config_.finish, issued->finish_target});
    }
  }
  return result;
}

Result Executor::finish(const Schedule& schedule, const RunArgs& args, const IssuedRun& issued,
                        const std::atomic<int>* issue_state, const WaitContext& ctx, RunFailure* failure) {
  RunState st;
  BRAID_TRY(prepare_state(schedule, args, config_, &st));
  st.ctx = ctx;
  st.ctx.peers = nullptr;
  st.ctx.dead_rank = nullptr;
  st.ctx.on_look = nullptr;  // the workers' waits: the hook is the waiting thread's
  st.abort_word = const_cast<std::atomic<uint64_t>*>(ctx.abort_word);
  device::Backend& dev = *config_.backend;
  const int rank = config_.rank;
  for (const Task& task : tasks_in_order(st, rank)) {
    if (!runs_on_host(schedule.order[task.pos].instruction)) continue;
    config_.pool->submit(static_cast<int>(next_worker_++ % config_.pool->size()),
                         [stp = &st, pos = task.pos, s = task.slice] { run_host_slice(stp, pos, s); });
  }

  // The rank an unfinished instruction is (transitively) waiting for: follow unmet
  // dependencies to the first instruction whose own dependencies are all met.
  auto blocking_rank = [&](int32_t pos) {
    int32_t at = pos;
    for (int step = 0; step < 1 << 16; ++step) {
      int32_t next = -1;
      for (const auto& d : schedule.order[at].deps)
        if (config_.counters[d.writer].load() < st.base + st.slices[d.writer]) {
          next = d.writer;
          break;
        }
      if (next < 0) break;
      at = next;
    }
    return schedule.order[at].rank;
  };

  // Wait for every write of this rank.
  Result result = Result::Success;
  for (int32_t pos : schedule.rank_order[rank]) {
    const uint64_t value = st.base + st.slices[pos];
    std::atomic<uint64_t>& counter = config_.counters[pos];
    WaitContext wait_ctx = ctx;
    // Any peer with unfinished writes in this run: the chain of waits may pass through ranks
    // whose queues are stuck behind the dead one, so following one chain is not enough.
    wait_ctx.blocks = [&](int q) {
      for (int32_t p : schedule.rank_order[q])
        if (config_.counters[p].load(std::memory_order_acquire) < st.base + st.slices[p]) return true;
      return false;
    };
    const WaitOutcome w = wait_until(wait_ctx, [&] { return counter.load(std::memory_order_acquire) >= value; });
    if (w == WaitOutcome::Done) continue;
    failure->outcome = w;
    failure->culprit = w == WaitOutcome::PeerDied && ctx.dead_rank ? *ctx.dead_rank : blocking_rank(pos);
    result = Result::RemoteError;
    break;
  }
  // Counters only this rank's own compute queue raises: a wait that fails is this rank's failure.
  const auto wait_own = [&](const std::atomic<uint64_t>* counter, uint64_t target) {
    if (wait_until(ctx, [&] { return counter->load(std::memory_order_acquire) >= target; }) == WaitOutcome::Done)
      return Result::Success;
    failure->outcome = WaitOutcome::TimedOut;
    failure->culprit = rank;
    return Result::RemoteError;
  };
  // The issuing thread's own targets, once it is done (it may have been held up in a CUDA call).
  if (result == Result::Success && issue_state != nullptr) {
    const WaitOutcome w = wait_until(ctx, [&] { return issue_state->load(std::memory_order_acquire) != kIssuePending; });
    if (w != WaitOutcome::Done || issue_state->load(std::memory_order_acquire) != kIssued) {
      failure->outcome = w == WaitOutcome::Done ? WaitOutcome::Aborted : w;
      failure->culprit = rank;
      result = Result::RemoteError;
    }
  }
  // A device reduction's trailing raise of `consumed` is the last op a run queues that the
  // counters above do not cover: wait for it too, or it may store into the control segment after
  // the communicator has unmapped it (seen once as a SIGSEGV at teardown with ranks as threads).
  if (result == Result::Success && issued.staging_index > 0) result = wait_own(config_.consumed, issued.staging_index);
  if (result == Result::Success && issued.finish_target > 0) result = wait_own(config_.finish, issued.finish_target);
  if (result != Result::Success) {
    // Stop everything that might still touch this run's state before it goes away.
    uint64_t expected = 0;
    st.abort_word->compare_exchange_strong(
        expected, abort_word(failure->outcome == WaitOutcome::PeerDied   ? AbortReason::RankDied
                             : failure->outcome == WaitOutcome::TimedOut ? AbortReason::RankStalled
                                                                         : AbortReason::LocalError,
                             failure->culprit >= 0 ? failure->culprit : rank));
    dev.abort();
    config_.pool->drop_pending();
  }
  config_.pool->wait_idle();
  return result;
}

}  // namespace braid::engine
