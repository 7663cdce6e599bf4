#include "engine/communicator.h"

#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstring>
#include <limits>
#include <thread>

#include "common/log.h"
#include "common/settings.h"
#include "engine/control.h"
#include "engine/faults.h"
#include "engine/stale_segments.h"
#include "plan/generate.h"

#if __has_include(<numa.h>)
#include <numa.h>
#define BRAID_HAVE_LIBNUMA 1
#endif

namespace braid::engine {
namespace {

constexpr size_t kCounterCapacity = size_t{1} << 20;  // progress counters (8 MiB, allocated at set-up)

// The progress counters a communicator's control segment holds: the host path's programs need
// them; a communicator for meetings and signals only (no staging: `numa_nodes` 0) holds none, so
// that braid's part of a communicator that never splits through PCIe pins kilobytes, not 8 MiB.
size_t counters_for(int numa_nodes) { return numa_nodes > 0 ? kCounterCapacity : 0; }
constexpr int kScratchSlices = 4;

std::string call_text(const CallRecord& c) {
  char text[200];
  const auto coll = static_cast<Collective>(c.collective.load());
  const auto type = static_cast<DataType>(c.dtype.load());
  std::string op = collective_reduces(coll)
                       ? std::string(", ") + std::string(redop_name(static_cast<RedOp>(c.op.load())))
                       : std::string();
  std::string root = (coll == Collective::Broadcast || coll == Collective::Reduce)
                         ? ", root " + std::to_string(c.root.load())
                         : std::string();
  std::string range;
  if (c.range_begin.load() != 0 || c.range_count.load() != c.count.load())
    range = ", elements " + std::to_string(c.range_begin.load()) + "+" + std::to_string(c.range_count.load());
  root += range;
  std::snprintf(text, sizeof(text), "%s(count %llu, %s%s%s)",
                std::string(collective_name(coll)).c_str(),
                static_cast<unsigned long long>(c.count.load()),
                std::string(datatype_name(type)).c_str(), op.c_str(), root.c_str());
  return text;
}

bool same_call(const CallRecord& a, const CallRecord& b) {
  return a.seq.load() == b.seq.load() && a.collective.load() == b.collective.load() &&
         a.count.load() == b.count.load() && a.dtype.load() == b.dtype.load() &&
         a.op.load() == b.op.load() && a.root.load() == b.root.load() &&
         a.range_begin.load() == b.range_begin.load() && a.range_count.load() == b.range_count.load();
}

std::string mib(uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return text;
}

// The failure to report when /dev/shm cannot hold a communicator's segments (last_error() holds
// the allocation's own): what is there, what braid needs, and what to do. `held`: what this set-up
// had allocated already (it is released as the set-up fails), counted as free.
Result shm_shortage(int nranks, size_t staging, int numa_count, uint64_t held) {
  const std::string cause = last_error();
  const uint64_t control = control_bytes(nranks, counters_for(numa_count));
  const uint64_t need = shm_bytes_needed(nranks, numa_count, staging);
  ShmSpace space;
  if (!shm_space(&space))
    return fail(Result::SystemError, "braid's shared memory for this communicator (%s) cannot be allocated: %s",
                mib(need).c_str(), cause.c_str());
  space.free = std::min(space.size, space.free + held);
  const uint64_t at_least = (space.size - std::min(space.size, space.free) + need + (1 << 20) - 1) >> 20;
  return fail(Result::SystemError,
              "%s (size %s, %s free) cannot hold braid's shared memory for this communicator: it needs %s "
              "(%s of control and %d x %s of staging). Give /dev/shm at least %llu MiB (docker run "
              "--shm-size=%llum, or a larger tmpfs) or lower BRAID_STAGING_BYTES (collectives then run in "
              "pieces). [%s]",
              kShmDir, mib(space.size).c_str(), mib(space.free).c_str(), mib(need).c_str(), mib(control).c_str(),
              numa_count, mib(staging).c_str(), static_cast<unsigned long long>(at_least),
              static_cast<unsigned long long>(at_least), cause.c_str());
}

}  // namespace

size_t shm_bytes_needed(int nranks, int numa_nodes, size_t staging_bytes) {
  return control_bytes(nranks, counters_for(numa_nodes)) +
         staging_bytes / 64 * 64 * static_cast<size_t>(std::max(0, numa_nodes));
}

CommId CommId::random() {
  CommId id;
  size_t got = 0;
  while (got < sizeof(id.bytes)) {
    ssize_t n = getrandom(id.bytes + got, sizeof(id.bytes) - got, 0);
    if (n > 0) got += static_cast<size_t>(n);
  }
  return id;
}

std::string CommId::hex() const {
  static const char digits[] = "0123456789abcdef";
  std::string s;
  for (uint8_t b : bytes) {
    s.push_back(digits[b >> 4]);
    s.push_back(digits[b & 15]);
  }
  return s;
}

Result Communicator::create(const CommId& id, int rank, int nranks,
                            const topo::Topology& topology, device::Backend* backend,
                            std::unique_ptr<Communicator>* out, CommunicatorOptions options) {
  if (nranks < 1 || nranks > 65535)
    return fail(Result::InvalidArgument, "nranks %d out of range (1..65535)", nranks);
  if (rank < 0 || rank >= nranks)
    return fail(Result::InvalidArgument, "rank %d out of range for %d ranks", rank, nranks);
  if (backend == nullptr) return fail(Result::InvalidArgument, "device backend is null");
  if (out == nullptr) return fail(Result::InvalidArgument, "output communicator pointer is null");
  const Settings& cfg = settings();
  if (cfg.staging_bytes != 0 && cfg.staging_bytes < 4096)
    return fail(Result::InvalidArgument, "BRAID_STAGING_BYTES %lld is too small (>= 4096)",
                static_cast<long long>(cfg.staging_bytes));

  std::unique_ptr<Communicator> c(new Communicator());
  c->rank_ = rank;
  c->nranks_ = nranks;
  c->topology_ = topology;
  c->backend_ = backend;
  c->name_prefix_ = "/braid-" + id.hex();
  c->staging_bytes_ =
      (cfg.staging_bytes > 0 ? static_cast<size_t>(cfg.staging_bytes) : backend->preferred_staging_bytes()) / 64 * 64;
  c->slice_bytes_ = cfg.slice_bytes > 0 ? static_cast<size_t>(cfg.slice_bytes) : backend->preferred_slice_bytes();
  // Staging segments, one per NUMA node: none without the host path.
  const int numa_count = options.host_path ? std::max<int>(1, static_cast<int>(topology.numa_nodes().size())) : 0;
  const double timeout = cfg.timeout;
  const size_t counters = counters_for(numa_count);
  const size_t control_size = control_bytes(nranks, counters);
  const size_t control_head = control_bytes(nranks, 0);  // where a failure is posted: allocated first
  const auto names = [&] {
    std::vector<std::string> n{c->name_prefix_ + "-ctl"};
    for (int i = 0; i < numa_count; ++i) n.push_back(c->name_prefix_ + "-stage" + std::to_string(i));
    return n;
  }();
  auto unlink_all = [&] {
    for (const auto& n : names) SharedSegment::unlink(n);
  };

  if (rank == 0) {
    remove_stale_segments();  // left by a set-up that was killed
    Result r = SharedSegment::create(names[0], control_size, &c->control_, nullptr, control_head);
    if (r != Result::Success)
      return SharedSegment::out_of_space() ? shm_shortage(nranks, c->staging_bytes_, numa_count, 0) : r;
    ControlHeader* h = control_header(c->control_.data());
    h->nranks.store(static_cast<uint64_t>(nranks));
    h->counter_capacity.store(counters);
    h->creator_pid.store(static_cast<uint64_t>(getpid()));
    h->creator_pid_ns.store(pid_namespace());
    h->magic.store(kControlMagic, std::memory_order_release);
  } else {
    BRAID_TRY(SharedSegment::open(names[0], control_size, timeout, nullptr, &c->control_));
    ControlHeader* h = control_header(c->control_.data());
    const auto start = std::chrono::steady_clock::now();
    while (h->magic.load(std::memory_order_acquire) != kControlMagic) {
      if (device::seconds_since(start) > timeout)
        return fail(Result::RemoteError, "rank 0 did not initialise %s within %.1f s",
                    names[0].c_str(), timeout);
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    if (h->nranks.load() != static_cast<uint64_t>(nranks))
      return fail(Result::InvalidUsage, "rank %d was created for %d ranks but rank 0 for %llu", rank, nranks,
                  static_cast<unsigned long long>(h->nranks.load()));
  }
  ControlHeader* header = control_header(c->control_.data());
  RankRecord* records = rank_records(c->control_.data());
  records[rank].pid.store(static_cast<uint64_t>(getpid()));
  records[rank].pid_ns.store(pid_namespace());
  header->opened.fetch_add(1);

  // From here this rank's failure is posted in the control segment before it leaves, so the others
  // fail at once with its cause instead of waiting BRAID_TIMEOUT. The names stay until every rank
  // opened the control segment (each has seen the failure then) or the wait for them times out.
  const auto failed_before_attach = [&](Result failure) {
    const std::string why = last_error();
    c->post_failure(rank, why);
    const auto start = std::chrono::steady_clock::now();
    while (header->opened.load() < static_cast<uint64_t>(nranks) && device::seconds_since(start) <= timeout)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    unlink_all();
    return fail(failure, "%s", why.c_str());
  };
  // Another rank's posted failure ends this rank's set-up with its cause.
  const auto peer_failed = [&] {
    if (header->opened.load() >= static_cast<uint64_t>(nranks)) unlink_all();
    return fail(Result::RemoteError, "%s", c->abort_text("set-up").c_str());
  };
  if (fault_injected(FaultStep::Segments, rank)) return failed_before_attach(injected_failure(FaultStep::Segments, rank));
  if (rank == 0) {
    uint64_t held = control_head;  // allocated so far
    Result r = c->control_.allocate(control_head, control_size - control_head);
    if (r == Result::Success) held = control_size;
    for (int i = 0; i < numa_count && r == Result::Success; ++i) {
      SharedSegment seg;
      r = SharedSegment::create(names[1 + i], c->staging_bytes_, &seg);
      if (r == Result::Success) {
        seg.place_on_numa(i);
        c->staging_.push_back(std::move(seg));
        held += c->staging_bytes_;
      }
    }
    if (r != Result::Success)
      return failed_before_attach(SharedSegment::out_of_space() ? shm_shortage(nranks, c->staging_bytes_, numa_count, held) : r);
  } else {
    for (int i = 0; i < numa_count; ++i) {
      SharedSegment seg;
      const Result r = SharedSegment::open(names[1 + i], c->staging_bytes_, timeout, &header->abort, &seg);
      if (r != Result::Success) return header->abort.load() != 0 ? peer_failed() : failed_before_attach(r);
      c->staging_.push_back(std::move(seg));
    }
  }

  // Attach, wait for everyone, then remove the names: from here a crash leaves nothing behind.
  header->attached.fetch_add(1);
  const auto start = std::chrono::steady_clock::now();
  auto last_peer_check = start;
  while (header->attached.load() < static_cast<uint64_t>(nranks)) {
    if (header->abort.load() != 0) return peer_failed();
    if (device::seconds_since(start) > timeout) {
      unlink_all();
      return fail(Result::RemoteError, "only %llu of %d ranks attached within %.1f s",
                  static_cast<unsigned long long>(header->attached.load()), nranks, timeout);
    }
    if (std::chrono::steady_clock::now() - last_peer_check > std::chrono::milliseconds(20)) {
      last_peer_check = std::chrono::steady_clock::now();
      for (int q = 0; q < nranks; ++q) {
        const PeerProcess peer{q, static_cast<pid_t>(records[q].pid.load()), records[q].pid_ns.load()};
        if (q != rank && peer.pid != 0 && peer.pid != getpid() && peer.dead()) {
          // Its names are this rank's to remove: a rank killed during set-up cannot.
          unlink_all();
          return fail(Result::RemoteError, "%s died during set-up", c->describe_rank(q).c_str());
        }
      }
    }
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  unlink_all();

  for (int q = 0; q < nranks; ++q) {
    const PeerProcess peer{q, static_cast<pid_t>(records[q].pid.load()), records[q].pid_ns.load()};
    if (q != rank && !(peer.pid == getpid() && peer.pid_ns == pid_namespace())) c->peers_.push_back(peer);
  }
  // Every rank is attached: a rank failing from here on tells the others through the abort word
  // (with its cause posted), so they stop at once (in their own set-up, or at their first
  // collective) instead of timing out.
  const auto failed_setup = [&](Result failure) {
    c->post_failure(rank, last_error());
    return failure;
  };
  if (fault_injected(FaultStep::Register, rank)) return failed_setup(injected_failure(FaultStep::Register, rank));
  if (Result reg = backend->register_host(c->control_.data(), c->control_.size()); reg != Result::Success)
    return failed_setup(reg);
  for (auto& seg : c->staging_)
    if (Result reg = backend->register_host(seg.data(), seg.size()); reg != Result::Success) return failed_setup(reg);
  backend->set_timeout(timeout);
  backend->set_abort_flag(&header->abort);
  if (!options.host_path) {
    BRAID_INFO(Init, "rank %d/%d: communicator %s for meetings and signals only (no staging, workers or scratch)",
               rank, nranks, c->name_prefix_.c_str());
    *out = std::move(c);
    return Result::Success;
  }

  // The worker pool: BRAID_THREADS / BRAID_CPU_LIST, else the cores of this rank's NUMA node
  // shared by the ranks staging there.
  const std::vector<int> rank_numa = topo::rank_numa(topology, nranks);
  const int my_numa = rank_numa.empty() ? 0 : rank_numa[rank];
  std::vector<int> cpus;
  if (!cfg.cpu_list.empty()) {
    if (Result parsed = parse_cpu_list(cfg.cpu_list, &cpus); parsed != Result::Success) return failed_setup(parsed);
  } else {
#ifdef BRAID_HAVE_LIBNUMA
    if (numa_available() >= 0 && numa_max_node() >= 1 && my_numa <= numa_max_node()) {
      struct bitmask* mask = numa_allocate_cpumask();
      if (numa_node_to_cpus(my_numa, mask) == 0)
        for (unsigned i = 0; i < mask->size; ++i)
          if (numa_bitmask_isbitset(mask, i)) cpus.push_back(static_cast<int>(i));
      numa_free_cpumask(mask);
    }
#endif
  }
  int threads = static_cast<int>(cfg.threads);
  if (threads <= 0) {
    const int sharing = std::max<int>(
        1, static_cast<int>(std::count(rank_numa.begin(), rank_numa.end(), my_numa)));
    const int slot = rank_numa.empty()
                         ? 0
                         : static_cast<int>(std::count(rank_numa.begin(), rank_numa.begin() + rank, my_numa));
    int cores = static_cast<int>(cpus.size());
    if (cores == 0) {
      const auto numas = topology.numa_nodes();
      if (my_numa < static_cast<int>(numas.size())) cores = topology.nodes[numas[my_numa]].cores;
    }
    if (cores <= 0) cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    cores = std::min<int>(cores, static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
    const WorkerCores mine = workers_for(cores, sharing, slot, cpus);
    threads = mine.threads;
    // A list the user gave is theirs to divide; the NUMA node's is sliced per rank.
    if (cfg.cpu_list.empty()) cpus = mine.cpus;
  }
  if (Result made = WorkerPool::create(threads, cpus, &c->pool_); made != Result::Success) return failed_setup(made);

  ExecutorConfig ec;
  ec.rank = rank;
  ec.backend = backend;
  ec.pool = c->pool_.get();
  ec.counters = progress_counters(c->control_.data(), nranks);
  RankRecord& own = rank_records(c->control_.data())[rank];
  ec.staged = &own.device_staged;
  ec.consumed = &own.device_consumed;
  ec.finish = &own.device_finish;
  ec.counter_capacity = kCounterCapacity;
  ec.abort_word = &control_header(c->control_.data())->abort;
  for (auto& seg : c->staging_) ec.staging.push_back(static_cast<unsigned char*>(seg.data()));
  ec.staging_bytes = c->staging_bytes_;
  ec.slice_bytes = c->slice_bytes_;
  ec.scratch_slices = kScratchSlices;
  ec.scratch = backend->device_scratch(kScratchSlices * c->slice_bytes_);
  if (ec.scratch == nullptr)
    return failed_setup(fail(Result::SystemError, "device scratch of %zu bytes unavailable",
                             kScratchSlices * c->slice_bytes_));
  c->executor_ = std::make_unique<Executor>(ec);
  BRAID_INFO(Init, "rank %d/%d: communicator %s, %d worker threads, staging %zu bytes x %d NUMA",
             rank, nranks, c->name_prefix_.c_str(), threads, c->staging_bytes_, numa_count);
  *out = std::move(c);
  return Result::Success;
}

Communicator::~Communicator() {
  if (backend_ != nullptr) {
    // Device work queued for runs that were never completed waits on words in the segments about
    // to be unmapped: dropped first.
    if (control_.data() != nullptr && rank_records(control_.data())[rank_].device_go.load() < runs_) backend_->abort();
    backend_->set_abort_flag(nullptr);  // the flag lives in the control segment, unmapped below
    for (auto& seg : staging_) backend_->unregister_host(seg.data());
    if (control_.data() != nullptr) backend_->unregister_host(control_.data());
  }
  pool_.reset();
}

Communicator::Footprint Communicator::footprint() const {
  Footprint f;
  f.pinned_bytes = control_.size();
  for (const auto& seg : staging_) f.pinned_bytes += seg.size();
  if (executor_ != nullptr) f.device_bytes = kScratchSlices * slice_bytes_;
  if (pool_) f.threads = pool_->size();
  return f;
}

std::vector<std::string> Communicator::segment_names() const {
  std::vector<std::string> n{name_prefix_ + "-ctl"};
  for (size_t i = 0; i < staging_.size(); ++i) n.push_back(name_prefix_ + "-stage" + std::to_string(i));
  return n;
}

void Communicator::abort() {
  if (control_.data() != nullptr) {
    uint64_t expected = 0;
    control_header(control_.data())
        ->abort.compare_exchange_strong(expected, abort_word(AbortReason::UserAbort, rank_));
  }
  if (backend_ != nullptr) backend_->abort();
  if (pool_) pool_->drop_pending();
}

void Communicator::post_failure(int rank, const std::string& text) {
  char* slot = rank_records(control_.data())[rank].failure;
  std::snprintf(slot, kFailureTextBytes, "%s", text.c_str());
  uint64_t none = 0;
  control_header(control_.data())->abort.compare_exchange_strong(none, abort_word(AbortReason::LocalError, rank));
}

std::string Communicator::failure_text(int rank) const {
  const char* slot = rank_records(control_.data())[rank].failure;
  return std::string(slot, strnlen(slot, kFailureTextBytes));
}

std::string Communicator::abort_text(const char* during) const {
  const uint64_t word = control_header(control_.data())->abort.load();
  const int culprit = abort_culprit(word);
  switch (abort_reason(word)) {
    case AbortReason::UserAbort:
      return describe_rank(culprit) + " aborted the communicator during " + during;
    case AbortReason::RankDied:
      return describe_rank(culprit) + " died during " + during;
    case AbortReason::RankStalled:
      return describe_rank(culprit) + " stopped responding during " + during;
    default: {
      const std::string posted = failure_text(culprit);
      return describe_rank(culprit) + " failed during " + during + (posted.empty() ? " (see its log)" : ": " + posted);
    }
  }
}

std::string Communicator::describe_rank(int rank) const {
  if (rank < 0 || rank >= nranks_) return "a rank";
  const auto pid = rank_records(control_.data())[rank].pid.load();
  return "rank " + std::to_string(rank) + " (pid " + std::to_string(pid) + ")";
}

Result Communicator::report_failure(Collective c, const RunFailure& f, double waited) {
  ControlHeader* h = control_header(control_.data());
  const std::string coll(collective_name(c));
  std::string text;
  if (f.outcome == WaitOutcome::PeerDied) {
    text = describe_rank(f.culprit) + " died during " + coll;
    uint64_t expected = 0;
    h->abort.compare_exchange_strong(expected, abort_word(AbortReason::RankDied, f.culprit));
  } else if (f.outcome == WaitOutcome::TimedOut) {
    char secs[32];
    std::snprintf(secs, sizeof(secs), "%.1f", waited);
    text = describe_rank(f.culprit) + " stopped responding during " + coll + " after " + secs + " s";
    uint64_t expected = 0;
    h->abort.compare_exchange_strong(expected, abort_word(AbortReason::RankStalled, f.culprit));
  } else {
    const uint64_t word = h->abort.load();
    const int culprit = abort_culprit(word);
    switch (abort_reason(word)) {
      case AbortReason::UserAbort:
        text = describe_rank(culprit) + " aborted the communicator during " + coll;
        break;
      case AbortReason::RankDied:
        text = describe_rank(culprit) + " died during " + coll;
        break;
      case AbortReason::RankStalled: {
        char secs[32];
        std::snprintf(secs, sizeof(secs), "%.1f", settings().timeout);
        text = describe_rank(culprit) + " stopped responding during " + coll + " after " + secs +
               " s";
        break;
      }
      default:
        text = abort_text(coll.c_str());
        break;
    }
  }
  std::string backend_text;
  if (backend_->status(&backend_text) != Result::Success && f.outcome == WaitOutcome::Done &&
      abort_reason(h->abort.load()) == AbortReason::LocalError && abort_culprit(h->abort.load()) == rank_)
    text += ": " + backend_text;
  record_failed(Result::RemoteError, text);  // before the backend refuses work (stop_every_rank says why)
  backend_->abort();
  if (pool_) pool_->drop_pending();
  return fail(Result::RemoteError, "%s", text.c_str());
}

void Communicator::record_failed(Result r, const std::string& text) {
  std::lock_guard lock(failed_mutex_);
  if (failed_ != Result::Success) return;
  failed_ = r;
  failed_text_ = text;
}

Result Communicator::check_usable() const {
  std::lock_guard lock(failed_mutex_);
  if (failed_ == Result::Success) return Result::Success;
  return fail(failed_, "communicator is unusable after an earlier error: %s", failed_text_.c_str());
}

WaitContext Communicator::wait_context(int* dead_rank) const {
  WaitContext ctx;
  ctx.abort_word = &control_header(control_.data())->abort;
  ctx.start = std::chrono::steady_clock::now();
  ctx.timeout_s = settings().timeout;
  ctx.peers = &peers_;
  ctx.dead_rank = dead_rank;
  return ctx;
}

Result Communicator::barrier(Collective c, const WaitContext& ctx) {
  if (fault_injected(FaultStep::Barrier, rank_)) {
    uint64_t none = 0;
    control_header(control_.data())->abort.compare_exchange_strong(none, abort_word(AbortReason::LocalError, rank_));
    return injected_failure(FaultStep::Barrier, rank_);
  }
  return arrive_and_wait(&RankRecord::barrier, ++barriers_, c, ctx);
}

Result Communicator::arrive_and_wait(std::atomic<uint64_t> RankRecord::*counter, uint64_t k, Collective c,
                                     const WaitContext& ctx) {
  RankRecord* records = rank_records(control_.data());
  (records[rank_].*counter).store(k, std::memory_order_release);
  for (int q = 0; q < nranks_; ++q) {
    WaitContext wait_ctx = ctx;
    wait_ctx.blocks = [q](int r) { return r == q; };
    const WaitOutcome w =
        wait_until(wait_ctx, [&] { return (records[q].*counter).load(std::memory_order_acquire) >= k; });
    if (w == WaitOutcome::Done) continue;
    RunFailure f;
    f.outcome = w;
    f.culprit = w == WaitOutcome::PeerDied ? *ctx.dead_rank : q;
    return report_failure(c, f, device::seconds_since(ctx.start));
  }
  return Result::Success;
}

Result Communicator::check_arguments(Collective c, const void* send, void* recv, size_t count,
                                     int type, int op, int root, const reduce::OpScalar* scalar) {
  const std::string name(collective_name(c));
  if (!datatype_valid(type))
    return fail(Result::InvalidArgument, "%s: invalid datatype %d", name.c_str(), type);
  if (collective_reduces(c)) {
    if (!redop_valid(op))
      return fail(Result::InvalidArgument, "%s: invalid reduction op %d", name.c_str(), op);
    if (static_cast<RedOp>(op) == RedOp::PreMulSum) {
      if (scalar == nullptr)
        return fail(Result::InvalidArgument, "%s: PreMulSum needs its scalar", name.c_str());
      if (scalar->type != static_cast<DataType>(type))
        return fail(Result::InvalidArgument, "%s: PreMulSum scalar is %s but the data is %s",
                    name.c_str(), std::string(datatype_name(scalar->type)).c_str(),
                    std::string(datatype_name(static_cast<DataType>(type))).c_str());
    }
  }
  const bool rooted = c == Collective::Broadcast || c == Collective::Reduce;
  if (rooted && (root < 0 || root >= nranks_))
    return fail(Result::InvalidArgument, "%s: root %d out of range for %d ranks", name.c_str(),
                root, nranks_);
  const size_t size = datatype_size(static_cast<DataType>(type));
  const size_t blocks = static_cast<size_t>(nranks_);
  if (count > std::numeric_limits<size_t>::max() / size / blocks ||
      count > (uint64_t{1} << 62) / size / blocks)
    return fail(Result::InvalidArgument, "%s: count %zu x %zu bytes x %d ranks overflows",
                name.c_str(), count, size, nranks_);
  if (count == 0) return Result::Success;
  const bool needs_send = !(c == Collective::Broadcast && rank_ != root);
  const bool needs_recv = !(c == Collective::Reduce && rank_ != root);
  if (needs_send && send == nullptr)
    return fail(Result::InvalidArgument, "%s: sendbuff is null (count %zu)", name.c_str(), count);
  if (needs_recv && recv == nullptr)
    return fail(Result::InvalidArgument, "%s: recvbuff is null (count %zu)", name.c_str(), count);
  return Result::Success;
}

Result Communicator::schedule_for(Collective c, int root, const std::vector<bool>& in_place,
                                  size_t bytes, DataType type, const dsl::Program* given,
                                  const Schedule** out) {
  if (given != nullptr) {
    given_schedule_ = std::make_unique<Schedule>();
    BRAID_TRY(build_schedule(*given, in_place, given_schedule_.get()));
    *out = given_schedule_.get();
    return Result::Success;
  }
  // The program depends on the message size only through the cost model's choices, so one per
  // power-of-two size class is kept (the element type does not change it).
  std::string key = std::to_string(static_cast<int>(c)) + "/" + std::to_string(root) + "/" +
                    std::to_string(std::bit_width(bytes)) + "/";
  for (bool b : in_place) key.push_back(b ? '1' : '0');
  auto it = cache_.find(key);
  if (it == cache_.end()) {
    plan::GenerateOptions options;
    BRAID_TRY(plan::apply_settings(&options));  // BRAID_CHUNKS, _REDUCE_PLACEMENT, _ALGORITHM, _DETERMINISTIC
    if (!plan::has_algorithm(c, options.algorithm)) options.algorithm = plan::GenerateOptions::Algorithm::Hierarchical;
    if (options.chunks == 0) options.chunks = backend_->preferred_chunks();
    options.root = root;
    options.bytes = bytes;
    options.dtype = type;
    dsl::Program program;
    BRAID_TRY(plan::generate(c, nranks_, topology_, options, &program));
    auto schedule = std::make_unique<Schedule>();
    BRAID_TRY(build_schedule(program, in_place, schedule.get()));
    BRAID_INFO(Coll, "%s: program with %d chunks, %zu instructions for %zu bytes",
               std::string(collective_name(c)).c_str(), program.chunks, schedule->order.size(),
               bytes);
    it = cache_.emplace(key, std::move(schedule)).first;
  }
  *out = it->second.get();
  return Result::Success;
}

Result Communicator::prepare(Collective c, const void* send, void* recv, size_t count, DataType type, RedOp op,
                             int root, const reduce::OpScalar* scalar, const dsl::Program* program, Range range,
                             QueuedCollective* q) {
  BRAID_TRY(check_usable());
  if (executor_ == nullptr)
    return fail(Result::InvalidUsage, "%s: this communicator was made without braid's host path",
                std::string(collective_name(c)).c_str());
  if (program != nullptr) {
    c = program->collective;
    root = program->root;
    if (program->ranks != nranks_)
      return fail(Result::InvalidArgument, "program is for %d ranks, communicator has %d",
                  program->ranks, nranks_);
  }
  BRAID_TRY(check_arguments(c, send, recv, count, static_cast<int>(type), static_cast<int>(op),
                            root, scalar));
  if (range.count == kWholeBlock) range = {0, count};
  if (range.begin > count || range.count > count - range.begin)
    return fail(Result::InvalidArgument, "%s: elements %zu+%zu lie outside blocks of %zu",
                std::string(collective_name(c)).c_str(), range.begin, range.count, count);
  if (!collective_reduces(c)) op = RedOp::Sum;
  static_cast<QueuedPlan&>(*q) = QueuedPlan{};
  q->issue_state.store(kIssuePending);
  q->collective = c;
  q->send = send;
  q->recv = recv;
  q->count = count;
  q->type = type;
  q->op = op;
  q->root = c == Collective::Broadcast || c == Collective::Reduce ? root : 0;
  q->range = range;
  if (count == 0 || range.count == 0) return Result::Success;
  const size_t esize = datatype_size(type);
  const auto* send_bytes = static_cast<const unsigned char*>(send);
  auto* recv_bytes = static_cast<unsigned char*>(recv);
  switch (c) {
    case Collective::AllGather:
      q->in_place = recv != nullptr && send_bytes == recv_bytes + rank_ * count * esize;
      break;
    case Collective::ReduceScatter:
      q->in_place = send != nullptr && recv_bytes == send_bytes + rank_ * count * esize;
      break;
    default:
      q->in_place = send == recv;
      break;
  }
  // Avg: PreMulSum(1/n) on floats (as NCCL), Sum then divide on integers.
  q->run_op = op;
  if (op == RedOp::PreMulSum) q->own_scalar = *scalar, q->scaled = true;
  if (op == RedOp::Avg) {
    if (datatype_is_float(type)) {
      q->own_scalar = reduce::OpScalar::of(type, 1.0 / nranks_);
      q->run_op = RedOp::PreMulSum;
      q->scaled = true;
    } else {
      q->run_op = RedOp::Sum;
      q->divide_by = static_cast<uint64_t>(nranks_);
    }
  }
  q->scalars.assign(q->scaled ? static_cast<size_t>(nranks_) : size_t{0}, q->own_scalar);
  q->moves = true;
  return Result::Success;
}

Result Communicator::meet(QueuedCollective& q, const WaitContext& ctx, std::vector<bool>* in_place_flags) {
  // Publish the call, meet the others, and check that every rank called the same thing.
  RankRecord* records = rank_records(control_.data());
  const uint64_t seq = ++calls_;
  CallRecord& mine = records[rank_].calls[seq % 2];
  mine.collective.store(static_cast<uint64_t>(q.collective));
  mine.count.store(q.count);
  mine.dtype.store(static_cast<uint64_t>(q.type));
  mine.op.store(static_cast<uint64_t>(q.op));
  mine.root.store(static_cast<uint64_t>(q.root));
  mine.in_place.store(q.in_place ? 1 : 0);
  mine.range_begin.store(q.range.begin);
  mine.range_count.store(q.range.count);
  uint64_t scalar_bits = 0;
  if (q.scaled) std::memcpy(&scalar_bits, q.own_scalar.bytes, sizeof scalar_bits);
  mine.scalar.store(scalar_bits);
  mine.seq.store(seq, std::memory_order_release);
  BRAID_TRACE(Engine, "%s call %llu: at the barrier", std::string(collective_name(q.collective)).c_str(),
              static_cast<unsigned long long>(seq));
  BRAID_TRY(barrier(q.collective, ctx));
  in_place_flags->assign(static_cast<size_t>(nranks_), false);
  for (int q_rank = 0; q_rank < nranks_; ++q_rank) {
    const CallRecord& theirs = records[q_rank].calls[seq % 2];
    if (!same_call(theirs, records[0].calls[seq % 2])) {
      return fail(Result::InvalidUsage,
                  "mismatched collectives: rank 0 called %s but rank %d called %s",
                  call_text(records[0].calls[seq % 2]).c_str(), q_rank, call_text(theirs).c_str());
    }
    (*in_place_flags)[q_rank] = theirs.in_place.load() != 0;
    if (q.scaled) {
      const uint64_t bits = theirs.scalar.load();
      q.scalars[q_rank] = reduce::OpScalar::from_bytes(q.type, &bits);
    }
  }
  return Result::Success;
}

Result Communicator::plan_runs(QueuedCollective& q, const std::vector<bool>& in_place_flags, const dsl::Program* program) {
  const size_t esize = datatype_size(q.type);
  const Collective c = q.collective;
  // The program is planned for what this call moves: the range of every block.
  const size_t message_bytes =
      q.range.count * esize *
      (c == Collective::AllGather || c == Collective::ReduceScatter || c == Collective::AllToAll
           ? static_cast<size_t>(nranks_)
           : size_t{1});
  BRAID_TRY(schedule_for(c, q.root, in_place_flags, message_bytes, q.type, program, &q.schedule));

  // Pieces: the program over a sub-range of every block, sized so its host slots fit.
  int max_slots = 1;
  for (int s : q.schedule->host_slots) max_slots = std::max(max_slots, s);
  const size_t slot_capacity = staging_bytes_ / static_cast<size_t>(max_slots) / 64 * 64;
  const uint64_t slot_elements = slot_capacity / esize;
  if (slot_elements == 0)
    return fail(Result::InvalidUsage,
                "%s: the program needs %d host slots per NUMA node; BRAID_STAGING_BYTES=%zu "
                "cannot hold one element each",
                std::string(collective_name(c)).c_str(), max_slots, staging_bytes_);
  const uint64_t piece_elements =
      std::min<uint64_t>(q.range.count, slot_elements * static_cast<uint64_t>(q.schedule->chunks));
  const uint64_t range_end = q.range.begin + q.range.count;
  for (uint64_t begin = q.range.begin; begin < range_end; begin += piece_elements) {
    QueuedCollective::Run run;
    RunArgs& args = run.args;
    args.in = q.send;
    args.out = q.recv;
    args.type = q.type;
    args.op = q.run_op;
    args.scalars = q.scalars.empty() ? nullptr : q.scalars.data();
    args.divide_by = q.divide_by;
    args.piece = {q.count, begin, std::min<uint64_t>(piece_elements, range_end - begin)};
    args.seq = ++runs_;
    q.runs.push_back(run);
  }
  return Result::Success;
}

Result Communicator::issue_runs(QueuedCollective& q) {
  backend_->set_timeout(settings().timeout);
  Result r = backend_->begin_collective();
  std::atomic<uint64_t>* go = &rank_records(control_.data())[rank_].device_go;
  for (size_t i = 0; r == Result::Success && i < q.runs.size(); ++i)
    r = executor_->issue(*q.schedule, q.runs[i].args, go, &q.runs[i].issued);
  // A failure is published by the caller, once it is recorded (issue()).
  if (r == Result::Success) q.issue_state.store(kIssued, std::memory_order_release);
  return r;
}

Result Communicator::run_host_part(QueuedCollective& q, WaitContext& ctx) {
  const Collective c = q.collective;
  ControlHeader* header = control_header(control_.data());
  std::atomic<uint64_t>* go = &rank_records(control_.data())[rank_].device_go;
  for (size_t i = 0; i < q.runs.size(); ++i) {
    if (i > 0) {
      ctx.start = std::chrono::steady_clock::now();
      BRAID_TRY(barrier(c, ctx));  // no rank still reads the previous piece's slots
    }
    RunArgs args = q.runs[i].args;
    args.scalars = q.scalars.empty() ? nullptr : q.scalars.data();  // as the ranks met (PreMulSum)
    go->store(args.seq, std::memory_order_release);
    ctx.start = std::chrono::steady_clock::now();
    RunFailure failure;
    Result r = executor_->finish(*q.schedule, args, q.runs[i].issued, &q.issue_state, ctx, &failure);
    if (r != Result::Success) {
      // This rank's own failure (not a wait that another rank's failure ended) keeps its own
      // code and text; the executor has raised the abort word naming this rank for the others.
      const uint64_t word = header->abort.load();
      const bool own = word == 0 || (abort_reason(word) == AbortReason::LocalError && abort_culprit(word) == rank_);
      if (failure.outcome == WaitOutcome::Done && own) {
        record_failed(r, last_error());
        return r;
      }
      return report_failure(c, failure, device::seconds_since(ctx.start));
    }
  }
  BRAID_TRACE(Engine, "%s call %llu: every piece ran", std::string(collective_name(c)).c_str(),
              static_cast<unsigned long long>(calls_));
  return Result::Success;
}

Result Communicator::collective(Collective c, const void* send, void* recv, size_t count,
                                DataType type, RedOp op, int root, const reduce::OpScalar* scalar,
                                const dsl::Program* program, Range range) {
  QueuedCollective q;
  BRAID_TRY(prepare(c, send, recv, count, type, op, root, scalar, program, range, &q));
  if (!q.moves) return Result::Success;
  // Here one thread does both halves: the meeting first, so that the schedule knows every rank's
  // in-place flags and PreMulSum scalars.
  int dead_rank = -1;
  WaitContext ctx = wait_context(&dead_rank);
  std::vector<bool> in_place_flags;
  BRAID_TRY(meet(q, ctx, &in_place_flags));
  BRAID_TRY(plan_runs(q, in_place_flags, program));
  BRAID_TRY(issue(q));
  BRAID_TRY(run_host_part(q, ctx));
  return backend_->end_collective();
}

Result Communicator::queue(Collective c, const void* send, void* recv, size_t count, DataType type, RedOp op,
                           int root, Range range, QueuedCollective* out) {
  BRAID_TRY(plan(c, send, recv, count, type, op, root, range, out));
  return issue(*out);
}

Result Communicator::plan(Collective c, const void* send, void* recv, size_t count, DataType type, RedOp op,
                          int root, Range range, QueuedCollective* out) {
  QueuedCollective& q = *out;
  if (op == RedOp::PreMulSum)
    return fail(Result::InvalidUsage,
                "%s: PreMulSum cannot be queued ahead of the ranks' meeting (its device-side scaling needs "
                "every rank's scalar)", std::string(collective_name(c)).c_str());
  BRAID_TRY(prepare(c, send, recv, count, type, op, root, nullptr, nullptr, range, &q));
  if (!q.moves) return Result::Success;
  // Before the meeting no rank knows the others' in-place flags: the schedule orders every rank's
  // buffers as if they aliased, which is valid for either (it only adds dependencies).
  return plan_runs(q, std::vector<bool>(static_cast<size_t>(nranks_), true), nullptr);
}

Result Communicator::issue(QueuedCollective& q) {
  if (!q.moves) {
    q.issue_state.store(kIssued, std::memory_order_release);
    return Result::Success;
  }
  Result r = issue_runs(q);
  if (r == Result::Success) return r;
  // Until this failure is published nothing can have recorded it, so a failure recorded now came
  // first (a backend refusing work once the progress thread stopped every rank is its symptom):
  // the caller is told that cause.
  const Result earlier = check_usable();
  if (earlier != Result::Success) {
    r = earlier;
  } else {
    stop_every_rank(r);  // the peers' queued operations wait for this rank's
  }
  q.issue_state.store(kIssueFailed, std::memory_order_release);
  return r;
}

void Communicator::stop_every_rank(Result r) {
  // Recorded before the backend refuses work, so that a caller refused sees the cause.
  record_failed(r, last_error());
  uint64_t none = 0;
  control_header(control_.data())->abort.compare_exchange_strong(none, abort_word(AbortReason::LocalError, rank_));
  backend_->abort();
}

Result Communicator::complete(QueuedCollective& q, std::function<void()> on_look) {
  if (!q.moves) return Result::Success;
  int dead_rank = -1;
  WaitContext ctx = wait_context(&dead_rank);
  ctx.on_look = std::move(on_look);
  std::vector<bool> in_place_flags;
  Result r = meet(q, ctx, &in_place_flags);
  if (r == Result::Success) r = run_host_part(q, ctx);
  if (r != Result::Success) {
    stop_every_rank(r);  // the device operations queued for this call wait on signals that will not come
  }
  return r;
}

Result Communicator::all_reduce(const void* send, void* recv, size_t count, DataType type,
                                RedOp op, const reduce::OpScalar* scalar) {
  return collective(Collective::AllReduce, send, recv, count, type, op, 0, scalar, nullptr);
}
Result Communicator::all_gather(const void* send, void* recv, size_t send_count, DataType type) {
  return collective(Collective::AllGather, send, recv, send_count, type, RedOp::Sum, 0, nullptr,
                    nullptr);
}
Result Communicator::reduce_scatter(const void* send, void* recv, size_t recv_count,
                                    DataType type, RedOp op, const reduce::OpScalar* scalar) {
  return collective(Collective::ReduceScatter, send, recv, recv_count, type, op, 0, scalar,
                    nullptr);
}
Result Communicator::broadcast(const void* send, void* recv, size_t count, DataType type,
                               int root) {
  return collective(Collective::Broadcast, send, recv, count, type, RedOp::Sum, root, nullptr,
                    nullptr);
}
Result Communicator::reduce(const void* send, void* recv, size_t count, DataType type, RedOp op,
                            int root, const reduce::OpScalar* scalar) {
  return collective(Collective::Reduce, send, recv, count, type, op, root, scalar, nullptr);
}
Result Communicator::all_to_all(const void* send, void* recv, size_t count, DataType type) {
  return collective(Collective::AllToAll, send, recv, count, type, RedOp::Sum, 0, nullptr,
                    nullptr);
}
Result Communicator::collective_range(Collective c, const void* send, void* recv, size_t count,
                                      DataType type, RedOp op, int root,
                                      const reduce::OpScalar* scalar, Range range) {
  return collective(c, send, recv, count, type, op, root, scalar, nullptr, range);
}

Result Communicator::exchange(Meeting meeting, std::span<const uint64_t> mine, std::vector<uint64_t>* all) {
  BRAID_TRY(check_usable());
  if (mine.size() > static_cast<size_t>(kExchangeSlots))
    return fail(Result::InternalError, "exchange of %zu values (at most %d)", mine.size(), kExchangeSlots);
  int dead_rank = -1;
  WaitContext ctx = wait_context(&dead_rank);
  // A meeting per call (braid's NVLink path, the routed exchange): the waiter leaves within
  // microseconds of the last arrival instead of a sleep's 50 us or more, for up to
  // device::kMeetingYieldNs of waiting (docs/MULTIPATH.md, "What a call costs the calling thread").
  ctx.yield_window_ns = device::kMeetingYieldNs;
  const bool path = meeting == Meeting::Path;
  RankRecord* records = rank_records(control_.data());
  auto exchange_of = [&](int q, uint64_t s) -> ExchangeRecord& {
    return path ? records[q].path_exchanges[s % 2] : records[q].exchanges[s % 2];
  };
  const uint64_t seq = path ? ++path_exchanges_ : ++exchanges_;
  ExchangeRecord& record = exchange_of(rank_, seq);
  for (size_t i = 0; i < mine.size(); ++i) record.values[i].store(mine[i], std::memory_order_relaxed);
  record.seq.store(seq, std::memory_order_release);
  // The barrier orders every rank's values before anyone reads; parity keeps a fast rank's next
  // exchange from overwriting values a slow rank is still reading.
  BRAID_TRY(path ? path_barrier(ctx) : barrier(Collective::AllGather, ctx));
  all->assign(mine.size() * static_cast<size_t>(nranks_), 0);
  for (int q = 0; q < nranks_; ++q) {
    const ExchangeRecord& theirs = exchange_of(q, seq);
    if (theirs.seq.load(std::memory_order_acquire) != seq)
      return fail(Result::InvalidUsage, "exchange %llu: rank %d is at another exchange",
                  static_cast<unsigned long long>(seq), q);
    for (size_t i = 0; i < mine.size(); ++i)
      (*all)[static_cast<size_t>(q) * mine.size() + i] = theirs.values[i].load(std::memory_order_relaxed);
  }
  return Result::Success;
}

// Meeting::Path's barrier: the engine's, on counters of its own.
Result Communicator::path_barrier(const WaitContext& ctx) {
  return arrive_and_wait(&RankRecord::path_barrier, ++path_barriers_, Collective::AllGather, ctx);
}

Result Communicator::run_program(const dsl::Program& program, const void* send, void* recv,
                                 size_t count, DataType type, RedOp op,
                                 const reduce::OpScalar* scalar) {
  return collective(program.collective, send, recv, count, type, op, program.root, scalar,
                    &program);
}

}  // namespace braid::engine
