#include "multipath/orchestrator.h"

#include <cuda.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <new>
#include <string>
#include <thread>

#include "cuda/device_scope.h"
#include "cuda/driver_calls.h"
#include "cuda/module_loading.h"
#include "api/comm.h"
#include "api/nccl_calls.h"
#include "balance/shares.h"
#include "balance/tuning_cache.h"
#include "common/lane_gate.h"
#include "common/log.h"
#include "common/settings.h"
#include "common/sizes.h"
#include "engine/communicator.h"
#include "multipath/lane_comm_config.h"
#include "multipath/nccl_share_path.h"
#include "multipath/pcie_share_path.h"
#include "multipath/peer_share_path.h"
#include "multipath/stream_queues.h"
#include "peer/peer_path.h"

namespace braid::multipath {

namespace {

// Event sets made ahead for split calls in flight, and the pool's low mark below which the
// progress thread makes that many more.
constexpr size_t kEventsAhead = 32;

// Split offsets are multiples of 4 KiB, so both shares start on a page and DMA stays aligned.
constexpr size_t kSplitAlignBytes = 4096;

// The engine's exchange, for the ranks' agreements (rank_agreement.h). Collective.
WordExchange engine_exchange(engine::Communicator& engine) {
  return [&engine](std::span<const uint64_t> mine, std::vector<uint64_t>* all) { return engine.exchange(mine, all); };
}

// NCCL's share on `stream`, which NCCL carries whole or the call fails.
Result enqueue_nccl(SharePath& nccl, const ShareCall& share, ShareRange range, cudaStream_t stream) {
  bool carried = false;
  BRAID_TRY(nccl.enqueue(share, range, stream, &carried));
  if (!carried) return fail(Result::InternalError, "multipath: NCCL refused its share");
  return Result::Success;
}

// Dynamic operators (ncclRedOpCreatePreMulSum) are numbered from ncclNumOps = RedOp::PreMulSum.
std::string op_text(ncclRedOp_t op) {
  return std::string(redop_name(static_cast<RedOp>(std::min<int>(op, ncclNumOps))));
}

}  // namespace

Result Orchestrator::cuda(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return Result::Success;
  return fail(Result::UnhandledCudaError, "multipath (GPU %d): %s: %s", device_, what, cudaGetErrorString(e));
}

Result Orchestrator::create(ncclComm_t comm, const api::NcclCalls& nccl, std::unique_ptr<Orchestrator>* out,
                            std::shared_ptr<const NcclConfigCopy> config, const PathsAdmitted* admitted) {
  out->reset();
  if (!nccl.can_split()) return fail(Result::InternalError, "multipath: NCCL entry points missing");
  // What follows registers host memory and allocates (calls that wait for the device and hold
  // CUDA's lock): not while another communicator's progress thread has GPU work to queue.
  quiet_lanes("multipath: making braid's part of a communicator", kQuietLanesSeconds);
  std::unique_ptr<Orchestrator> o(new Orchestrator());
  o->comm_ = comm;
  o->nccl_ = nccl;
  o->app_config_ = std::move(config);
  // Without a PCIe share braid's engine serves the copy engines' meetings and signals only: no
  // staging, worker threads or device scratch.
  const bool host_path = admitted == nullptr || admitted->pcie_share_admitted();
  BRAID_TRY(api::init_from_nccl(&o->braid_, comm, nccl, engine::CommunicatorOptions{.host_path = host_path}));
  o->rank_ = o->braid_->rank;
  o->nranks_ = o->braid_->nranks;
  o->device_ = o->braid_->device;
  int previous = 0;
  BRAID_TRY(o->cuda(cudaGetDevice(&previous), "cudaGetDevice"));
  BRAID_TRY(o->cuda(cudaSetDevice(o->device_), "cudaSetDevice"));
  Result r = o->cuda(cudaStreamCreateWithFlags(&o->pcie_stream_, cudaStreamNonBlocking), "cudaStreamCreate");
  if (r == Result::Success)
    r = o->cuda(cudaStreamCreateWithFlags(&o->copy_stream_, cudaStreamNonBlocking), "cudaStreamCreate (copy engines)");
  if (r == Result::Success)
    r = o->cuda(cudaStreamCreateWithFlags(&o->timing_stream_, cudaStreamNonBlocking), "cudaStreamCreate (fork times)");
  void* done = nullptr;
  if (r == Result::Success)
    r = o->cuda(cudaHostAlloc(&done, sizeof(std::atomic<uint64_t>), cudaHostAllocMapped | cudaHostAllocPortable),
                "cudaHostAlloc (the PCIe shares' completion word)");
  if (r == Result::Success) {
    o->done_ = new (done) std::atomic<uint64_t>(0);
    void* device = nullptr;
    r = o->cuda(cudaHostGetDevicePointer(&device, done, 0), "cudaHostGetDevicePointer");
    o->done_device_ = reinterpret_cast<unsigned long long>(device);
  }
  if (r == Result::Success && !cuda::driver().complete())
    r = fail(Result::UnhandledCudaError, "multipath: the CUDA driver lacks the stream memory operations braid needs");
  cudaSetDevice(previous);
  BRAID_TRY(r);

  // Both are Choice settings: the settings layer admits only their listed values.
  const bool copy_based = settings().split_nccl_share == "copy";
  const std::string& nvlink_path = settings().nvlink_path;
  bool nvlink = false;
  for (const auto& link : o->braid_->engine->topology().links) nvlink |= link.kind == topo::LinkKind::NvLink;
  // auto: only where it was measured to pay, two GPUs sharing NVLink. Peer copies between GPUs on
  // PCIe alone are unmeasured, and on 4x H200 braid's path lost to NCCL's kernels (AllGather
  // 0.68-0.72x from 16 MB, AllReduce 0.73x at 256 MB, training steps up to 27% slower:
  // docs/PERFORMANCE.md).
  const bool copy_engines = admitted != nullptr ? admitted->copy_engines_admitted()
                                                : nvlink_path == "copy" || (nvlink_path == "auto" && nvlink && o->nranks_ == 2);
  if (copy_engines) {
    // Collective: every rank learns the same answer. The caller's device is restored after.
    std::unique_ptr<peer::PeerPath> peer;
    const Result made = peer::PeerPath::create(o->braid_, &peer);
    cudaSetDevice(previous);
    if (made == Result::Success) o->copy_engines_ = std::make_unique<PeerSharePath>(std::move(peer));
    if (made != Result::Success && nvlink_path == "copy")
      BRAID_WARN(Init, "multipath: BRAID_NVLINK_PATH=copy, but %s; NCCL carries the NVLink share", last_error());
    else if (made != Result::Success)
      BRAID_INFO(Init, "multipath: no copy-engine NVLink path (%s); NCCL carries the NVLink share", last_error());
  }

  o->nccl_path_ = std::make_unique<NcclSharePath>(comm, nccl, o->rank_, o->nranks_, copy_based);
  o->pcie_path_ = std::make_unique<PcieSharePath>(o->braid_);

  std::unique_ptr<balance::Balancer> balancer;
  BRAID_TRY(balance::make_balancer_from_settings(2, &balancer));
  int64_t min_bytes = settings().split_min_bytes;
  if (min_bytes <= 0) {
    // Auto: where the GPUs share NVLink, NCCL alone finishes a 64 MB all_reduce in 0.25 ms, about
    // the PCIe path's fixed latency (~0.23 ms on 2x H200), so only larger ones can gain
    // (docs/PERFORMANCE.md). Without NVLink, HyLink's S_min of 1 MB.
    min_bytes = nvlink ? (int64_t{128} << 20) : (int64_t{1} << 20);
  }
  const bool async = settings().async;
  // Without the progress thread every earlier call is settled already: no lag is needed.
  const auto lag = async ? static_cast<uint64_t>(std::max<int64_t>(1, settings().split_settle_lag)) : uint64_t{1};
  o->ledger_ = std::make_unique<SplitLedger>(
      std::make_unique<balance::SplitTable>(std::move(balancer), static_cast<size_t>(std::max<int64_t>(min_bytes, 1))),
      o->nranks_, lag, kSplitAlignBytes);
  {
    // Collective, so that every rank splits alike even where the ranks' environments differ.
    const LaneQueueing process{.connections = cuda_connections(std::getenv("CUDA_DEVICE_MAX_CONNECTIONS")),
                               .lazy_module_loading = async && cuda::module_loading_is_lazy()};
    const WordExchange exchange = engine_exchange(*o->braid_->engine);
    bool forbidden = admitted != nullptr && !admitted->pcie_share_admitted();
    if (admitted == nullptr) BRAID_TRY(any_rank_forbids_lane_queueing(process, exchange, &forbidden));
    // NCCL's share on the progress thread where every rank asks for it; its communicator comes at
    // the first call that needs it (make_lane_comm).
    const bool lane_nccl = !forbidden && settings().nccl_share_on_lane && async && !copy_based && nccl.ncclCommSplit != nullptr &&
                           nccl.ncclCommGetAsyncError != nullptr && nccl.ncclCommAbort != nullptr &&
                           nccl.ncclCommDestroy != nullptr;
    bool everyone = false;
    BRAID_TRY(every_rank(lane_nccl, exchange, &everyone));
    if (everyone) o->lane_comm_state_ = kLaneCommUntried;
    if (forbidden) {
      o->ledger_->keep_to_dedicated_path();
      // This rank knows its own reason; of another rank's only that it had one.
      const bool here = !progress_thread_may_queue(process);
      const std::string few_queues = "CUDA_DEVICE_MAX_CONNECTIONS is below " + std::to_string(kDefaultCudaConnections);
      std::string why = few_queues + " or CUDA loads modules lazily";
      if (admitted != nullptr)
        why = std::string(refusal_text(admitted->pcie_share));
      else if (here && process.lazy_module_loading)
        why = "CUDA loads modules lazily (a kernel's first launch would wait for the share's copies behind CUDA's "
              "lock; CUDA_MODULE_LOADING=EAGER lifts it)";
      else if (here)
        why = few_queues + " (the share's copies would queue behind the callers' waits)";
      BRAID_INFO(Init, "multipath: braid's PCIe share is off, the NVLink share alone runs: %s%s",
                 admitted != nullptr ? "" : here ? "on this rank " : "on another rank ", why.c_str());
    }
  }
  if (!settings().tuning_cache.empty()) {
    const size_t restored = balance::load_tuning_cache(o->ledger_->table(), settings().tuning_cache);
    BRAID_INFO(Balance, "multipath: %zu learned splits restored from %s", restored,
               settings().tuning_cache.c_str());
  }
  if (!settings().split_trace.empty() && o->rank_ == 0) {
    // Appended to: every split communicator of every process may write the same file (O_APPEND
    // keeps each line whole); `braid run --trace` removes the file before the run.
    o->trace_ = std::fopen(settings().split_trace.c_str(), "a");
    if (o->trace_ == nullptr)
      BRAID_WARN(Balance, "multipath: cannot write the split trace %s", settings().split_trace.c_str());
  }
  BRAID_INFO(Init, "multipath: rank %d/%d on GPU %d splits collectives of %lld bytes and more across "
             "NVLink (%s) and braid's PCIe path (balancer %s)", o->rank_, o->nranks_, o->device_,
             static_cast<long long>(min_bytes), o->copy_engines_ ? "AllGather and AllReduce on braid's own path, the rest on NCCL" : "NCCL",
             std::string(o->ledger_->table().balancer_name()).c_str());
  // Events for the calls in flight, made now rather than by the calls (take_events), where calls
  // can be handed to the progress thread at all. A failure here is not the path's: calls make
  // their own then.
  const bool lane_work = !o->ledger_->dedicated_only();
  if (lane_work) {
    cudaSetDevice(o->device_);
    if (o->make_events(kEventsAhead, &o->free_events_) != Result::Success) cudaGetLastError();
    cudaSetDevice(previous);
  }
  // No progress thread where nothing is ever handed to it: the calling thread settles every call.
  o->lane_ = std::make_unique<ProgressLane>(static_cast<LaneSteps*>(o.get()), o->ledger_.get(), async && lane_work);
  const engine::Communicator::Footprint held = o->braid_->engine->footprint();
  BRAID_INFO(Init, "multipath: rank %d/%d holds %zu bytes of pinned host memory, %zu bytes of device scratch, %d "
             "worker threads and %s progress thread",
             o->rank_, o->nranks_, held.pinned_bytes, held.device_bytes, held.threads, async && lane_work ? "a" : "no");
  if (settings().caller_profile) o->profile_ = std::make_unique<CallerProfile>();
  *out = std::move(o);
  return Result::Success;
}

void Orchestrator::use_balancer(std::unique_ptr<balance::Balancer> balancer) {
  ledger_->replace_table(std::make_unique<balance::SplitTable>(std::move(balancer), ledger_->table().split_min_bytes()));
}

void Orchestrator::abort() {
  aborted_.store(true);
  if (lane_) lane_->abort();  // made last in create(): before it, nothing runs to abort
  // A share of NCCL's that a dead peer holds up would hold up the application's abort of its own
  // communicator next (that waits for the device). Bounded: the lock's holder may be stuck itself.
  std::unique_lock lock(lane_comm_mutex_, std::defer_lock);
  if (lock.try_lock_for(std::chrono::seconds(1)) && lane_comm_ != nullptr) {
    nccl_.ncclCommAbort(lane_comm_);
    lane_comm_ = nullptr;
  }
}

void Orchestrator::abort_transfers() {
  if (braid_ != nullptr && braid_->engine) braid_->engine->abort();
}

Orchestrator::~Orchestrator() {
  if (lane_) {
    // The progress thread runs what is queued (callers' streams wait for it), then ends. What it
    // settled goes into the table (and the trace) in call order; calls it could not settle are
    // dropped: settling meets the other ranks, which may be gone already.
    lane_->stop();
    lane_->apply_ready([this](LaneJob& job, const std::vector<double>& seconds, double next_share) {
      record_applied(job, seconds, next_share);
    });
  }
  if (profile_ != nullptr)
    BRAID_INFO(Init, "multipath: rank %d/%d: %s", rank_, nranks_, profile_->summary().c_str());
  // The frees below wait for the device: not while another communicator's progress thread has
  // GPU work to queue.
  quiet_lanes("multipath: freeing braid's part of a communicator", kQuietLanesSeconds);
  if (std::lock_guard lock(lane_comm_mutex_); lane_comm_ != nullptr) {
    cudaSetDevice(device_);
    // After a failure or an abort its last share may never end (a peer died inside it): aborted,
    // not waited for, before the streams that wait on it are synchronised below.
    std::string text;
    if (aborted_.load() || failure(&text) != Result::Success)
      nccl_.ncclCommAbort(lane_comm_);
    else
      nccl_.ncclCommDestroy(lane_comm_);
    lane_comm_ = nullptr;
  }
  if (braid_ != nullptr) {
    cudaSetDevice(device_);
    if (rank_ == 0 && ledger_ && !settings().tuning_cache.empty())
      balance::save_tuning_cache(ledger_->table(), settings().tuning_cache);
  }
  if (pcie_stream_ != nullptr) cudaStreamSynchronize(pcie_stream_), cudaStreamDestroy(pcie_stream_);
  if (copy_stream_ != nullptr) cudaStreamSynchronize(copy_stream_), cudaStreamDestroy(copy_stream_);
  if (timing_stream_ != nullptr) cudaStreamSynchronize(timing_stream_), cudaStreamDestroy(timing_stream_);
  if (nccl_stream_ != nullptr) cudaStreamSynchronize(nccl_stream_), cudaStreamDestroy(nccl_stream_);
  // Before braid's communicator, which the paths use.
  copy_engines_.reset();
  nccl_path_.reset();
  lane_nccl_path_.reset();
  pcie_path_.reset();
  for (const CallEvents& e : all_events_) {
    cudaEventDestroy(e.fork);
    cudaEventDestroy(e.fork_time);
    cudaEventDestroy(e.nccl_end);
    cudaEventDestroy(e.pcie_end);
    cudaEventDestroy(e.joined);
  }
  if (done_ != nullptr) cudaFreeHost(done_);
  if (braid_ != nullptr) braidCommDestroy(braid_);
  if (trace_ != nullptr) std::fclose(trace_);
}

bool Orchestrator::wants(const SplitCall& call) const {
  // After a failure of braid's share, calls still come here and fail (never a silent fallback).
  if (!splittable(call.collective)) return false;
  if (!datatype_valid(static_cast<int>(call.type))) return false;
  if (call.op >= ncclNumOps && collective_reduces(call.collective)) {
    // An operator this braid cannot remake, or one made for another type: NCCL alone answers.
    const auto spec = premulsum_.find(call.op);
    if (spec == premulsum_.end() || spec->second.type != call.type) return false;
  }
  if (copy_engines_take(call)) return true;
  return message_bytes(call, nranks_) >= ledger_->table().split_min_bytes();
}

bool Orchestrator::copy_engines_take(const SplitCall& call) const {
  // AllReduce's NVLink path is a kernel on the GPU's SMs: beside a backward pass it cost DDP more
  // than it gained (docs/PERFORMANCE.md), so it has a threshold of its own.
  const int64_t copy_min = call.collective == Collective::AllReduce ? settings().nvlink_allreduce_min_bytes
                                                                    : settings().nvlink_copy_min_bytes;
  return rides_copy_engines(call) && message_bytes(call, nranks_) >= byte_threshold(copy_min);
}

// Operators made on the communicator (PreMulSum) have values from ncclNumOps on.
static RedOp builtin_or_premulsum(ncclRedOp_t op) {
  return op < ncclNumOps ? static_cast<RedOp>(op) : RedOp::PreMulSum;
}

// The call with its operator as braid names it, resolved no further (the share's scalar comes later).
static ShareCall share_of(const SplitCall& call) {
  ShareCall share;
  share.call = call;
  share.op = builtin_or_premulsum(call.op);
  return share;
}

bool Orchestrator::rides_copy_engines(const SplitCall& call) const {
  return copy_engines_ != nullptr && !copy_engines_off_ && copy_engines_->carries(share_of(call));
}

void Orchestrator::add_premulsum(ncclRedOp_t op, const PreMulSumSpec& spec) { premulsum_[op] = spec; }

void Orchestrator::remove_premulsum(ncclRedOp_t op) { premulsum_.erase(op); }

// ---- the calling thread ----

Result Orchestrator::failure(std::string* text) const { return lane_ ? lane_->failure(text) : Result::Success; }

Result Orchestrator::refuse_after_failure() const {
  std::string text;
  if (const Result f = failure(&text); f != Result::Success)
    return fail(f, "multipath: braid's PCIe path failed earlier on this communicator: %s", text.c_str());
  return Result::Success;
}

Result Orchestrator::resolve_op(const SplitCall& call, Job* job) const {
  job->share = share_of(call);  // built-in operators have the same values as braid's
  if (!collective_reduces(call.collective) || call.op < ncclNumOps) return Result::Success;
  const auto spec = premulsum_.find(call.op);
  if (spec == premulsum_.end())
    return fail(Result::InvalidArgument, "multipath: reduction op %d was not made on this communicator", call.op);
  if (static_cast<int>(spec->second.type) != static_cast<int>(call.type))
    return fail(Result::InvalidArgument, "multipath: PreMulSum op %d was made for another datatype", call.op);
  if (spec->second.residence == ncclScalarDevice)
    job->device_scalar = spec->second.device_pointer;
  else
    job->share.scalar = reduce::OpScalar::from_bytes(static_cast<DataType>(call.type), spec->second.host_value);
  return Result::Success;
}

Result Orchestrator::take_events(CallEvents* out) {
  {
    std::lock_guard lock(events_mutex_);
    if (!free_events_.empty()) {
      *out = free_events_.back();
      free_events_.pop_back();
      if (free_events_.size() < kEventsLow) events_low_.store(true, std::memory_order_relaxed);
      return Result::Success;
    }
  }
  // The pool ran dry (more calls in flight than ever before): made here, at four event creations'
  // cost to this call.
  std::vector<CallEvents> made;
  BRAID_TRY(make_events(1, &made));
  *out = made.front();
  return Result::Success;
}

// Timing events only where timed: no blocking sync, no cross-process use.
Result Orchestrator::make_events(size_t count, std::vector<CallEvents>* out) {
  for (size_t i = 0; i < count; ++i) {
    CallEvents e;
    Result r = cuda(cudaEventCreateWithFlags(&e.fork, cudaEventDisableTiming), "cudaEventCreate");
    if (r == Result::Success) r = cuda(cudaEventCreate(&e.fork_time), "cudaEventCreate");
    if (r == Result::Success) r = cuda(cudaEventCreate(&e.nccl_end), "cudaEventCreate");
    if (r == Result::Success) r = cuda(cudaEventCreate(&e.pcie_end), "cudaEventCreate");
    if (r == Result::Success) r = cuda(cudaEventCreateWithFlags(&e.joined, cudaEventDisableTiming), "cudaEventCreate");
    {
      std::lock_guard lock(events_mutex_);
      all_events_.push_back(e);  // destroyed with the orchestrator, made or not
    }
    BRAID_TRY(r);
    out->push_back(e);
  }
  return Result::Success;
}

// On the progress thread, between jobs: the calling thread then never pays for event creation
// when calls pile up (each in-flight call holds a set; at 64 MB and up on the one-GPU rig it did,
// and host time per call rose by microseconds where it happened).
void Orchestrator::refill_events() {
  if (!events_low_.exchange(false, std::memory_order_relaxed)) return;
  std::vector<CallEvents> made;
  const Result r = make_events(kEventsLow, &made);
  std::lock_guard lock(events_mutex_);
  free_events_.insert(free_events_.end(), made.begin(), made.end());
  if (r != Result::Success) cudaGetLastError();  // the caller makes its own when the pool is dry
}

void Orchestrator::give_back_events(const CallEvents& events) {
  std::lock_guard lock(events_mutex_);
  free_events_.push_back(events);
}

Result Orchestrator::apply_settled(uint64_t call, bool beyond_lag) {
  return lane_->apply_through(call, beyond_lag, [this](LaneJob& job, const std::vector<double>& seconds, double next_share) {
    record_applied(job, seconds, next_share);
  });
}

void Orchestrator::record_applied(LaneJob& job, const std::vector<double>& seconds, double next_share) {
  SplitRecord& r = static_cast<Job&>(job).record;
  r.next_pcie_share = next_share;
  if (r.copy_refused && !copy_engines_off_) {
    copy_engines_off_ = true;
    BRAID_INFO(Balance, "multipath: call %llu: a rank's buffer is null or cannot be shared through CUDA IPC; braid's "
               "PCIe path carried its NVLink share, and from here NCCL carries them",
               static_cast<unsigned long long>(r.call));
  }
  if (!seconds.empty()) {
    // A timed call: the slowest rank's time of each path.
    r.timed = true;
    for (size_t q = 0; 2 * q + 1 < seconds.size(); ++q) {
      r.nccl_seconds = std::max(r.nccl_seconds, seconds[2 * q]);
      r.pcie_seconds = std::max(r.pcie_seconds, seconds[2 * q + 1]);
    }
  }
  const DataType type = static_cast<DataType>(r.what.type);
  BRAID_INFO(Balance, "split %s %s %s %zu B call %llu: nvlink (%s) %zu + pcie %zu elements, %.3f / %.3f ms, next pcie share %.4f, caller %.1f us",
             std::string(collective_name(r.what.collective)).c_str(), std::string(datatype_name(type)).c_str(),
             op_text(r.what.op).c_str(), r.bytes, static_cast<unsigned long long>(r.call),
             r.copy_refused ? "refused: pcie" : r.copy_deferred ? "deferred: pcie" : r.nvlink_copy ? "braid" : "nccl", r.nccl_elements, r.pcie_elements, r.nccl_seconds * 1e3,
             r.pcie_seconds * 1e3, r.next_pcie_share, r.caller_seconds * 1e6);
  trace(r);
  if (keep_history_) history_.push_back(r);
}

// apply_settled waits for each call's record in turn: nothing to wait for first.
Result Orchestrator::drain() { return apply_settled(ledger_->calls(), true); }

uint64_t Orchestrator::calls() const { return ledger_->calls(); }

Result Orchestrator::run(const SplitCall& call, cudaStream_t stream, CallerProfile::Clock::time_point entered) {
  const auto began = entered != CallerProfile::Clock::time_point{} ? entered : CallerProfile::Clock::now();
  const auto caller_seconds = [&] { return std::chrono::duration<double>(CallerProfile::Clock::now() - began).count(); };
  if (profile_ != nullptr) profile_->begin(began), profile_->mark(CallerProfile::kShim);
  const auto mark = [this](CallerProfile::Phase phase) {
    if (profile_ != nullptr) profile_->mark(phase);
  };
  BRAID_TRY(refuse_after_failure());
  // The caller's current device is the caller's (one thread may drive several GPUs): restored.
  const cuda::DeviceScope on_device(device_);
  BRAID_TRY(cuda(on_device.status(), "cudaSetDevice"));

  // A peer's new buffer (or more scratch) the copy engines deferred a call for: mapped here, once
  // braid's progress has run every call so far (nothing then waits for it). Only when a call
  // brought a new allocation: in steady state an application reuses its buffers.
  if (copy_engines_ != nullptr && copy_engines_->path().needs_preparing()) BRAID_TRY(prepare_copy_engines());
  // Call k's split uses the times of calls up to k - lag, the same on every rank; the calling
  // thread waits only when braid's progress is that far behind.
  mark(CallerProfile::kScope);
  BRAID_TRY(apply_settled(ledger_->must_apply_through()));
  mark(CallerProfile::kSettle);
  auto job = std::make_unique<Job>();
  const DataType type = static_cast<DataType>(call.type);
  job->record.what = call;
  job->record.bytes = message_bytes(call, nranks_);
  BRAID_TRY(ledger_->next(call.collective, type, job->record.bytes, call.count, &job->ledger));
  const uint64_t call_number = job->ledger.call;
  const size_t nccl_elements = job->ledger.dedicated_elements;
  job->record.call = call_number;
  job->record.nccl_elements = nccl_elements;
  job->record.pcie_elements = job->ledger.pcie_elements;
  BRAID_TRACE(Balance, "multipath: call %llu: settled calls applied through %llu", static_cast<unsigned long long>(call_number),
              static_cast<unsigned long long>(ledger_->applied()));
  // The ledger counted this call: from here it is settled whatever happens, or every later call
  // would wait for it. A call NCCL alone carried is settled at once, by the calling thread: its
  // record meets no other rank (only calls with a PCIe share exchange times), so the progress
  // thread is not woken for it.
  // braid's copy engines take the NVLink share where they carry the call. Their per-call meeting
  // with the peers is the calling thread's, or with BRAID_NVLINK_ON_LANE the progress thread's,
  // like braid's PCIe share.
  const bool copy = nccl_elements > 0 && rides_copy_engines(call);
  // Kept to the NVLink share (stream_queues.h), the meeting stays here too.
  job->nvlink_on_lane = copy && settings().nvlink_on_lane && !ledger_->dedicated_only();
  job->record.nvlink_copy = copy;
  job->nccl_on_lane = !copy && nccl_share_on_lane(call, job->ledger);
  // A collective and size class NCCL's communicator for the progress thread has not run yet
  // (first_uses.h): this thread queues its share there, once the lane is idle (both threads never
  // use it at once).
  const bool warming =
      job->nccl_on_lane &&
      lane_comm_first_uses_.first(call.collective,
                                  message_bytes(call, nranks_) / std::max<size_t>(1, call.count) * nccl_elements);
  if (warming) {
    (void)lane_->wait_idle();
    job->nccl_on_lane = false;
  }
  if (job->copy_engines()) copy_engines_->publish(share_of(call), ShareRange{0, nccl_elements}, &job->publication);
  if (!job->runs_on_lane()) {
    // The NVLink share alone on the caller's stream: no fork and no events.
    mark(CallerProfile::kPrepare);
    const Result r = caller_nvlink_share(share_of(call), ShareRange{0, call.count}, stream, &job->record);
    mark(CallerProfile::kNccl);
    job->record.caller_seconds = caller_seconds();
    lane_->settle_at_once(std::move(job));
    mark(CallerProfile::kHandOn);
    if (profile_ != nullptr) profile_->end(/*handed_on=*/false);
    return r;
  }
  if (Result r = resolve_op(call, job.get()); r != Result::Success) return lane_->settle_at_once(std::move(job)), r;
  if (Result r = take_events(&job->events); r != Result::Success) return lane_->settle_at_once(std::move(job)), r;
  const CallEvents e = job->events;
  job->caller_timed = job->timed() && callers_time_forks_.load(std::memory_order_relaxed);
  job->fork_timed = job->caller_timed;
  mark(CallerProfile::kPrepare);
  // The fork (braid's shares wait for it) and NCCL's share right after it on the caller's stream:
  // all shares run at once, and the calling thread queues as little as it can.
  Result r = cuda(cudaEventRecord(job->fork(), stream), "cudaEventRecord (fork)");
  mark(CallerProfile::kFork);
  if (r == Result::Success && nccl_elements > 0 && !job->copy_engines() && !job->nccl_on_lane) {
    if (warming) {
      r = enqueue_on_lane_comm(*job, stream);
    } else {
      r = caller_nvlink_share(job->share, ShareRange{0, nccl_elements}, stream, &job->record);
    }
    if (r == Result::Success && job->timed()) r = cuda(cudaEventRecord(e.nccl_end, stream), "cudaEventRecord");
  }
  mark(CallerProfile::kNccl);
  if (r != Result::Success) {
    give_back_events(e);
    lane_->settle_at_once(std::move(job));
    return r;
  }
  job->record.caller_seconds = caller_seconds();
  if (!lane_->async()) {
    // BRAID_ASYNC=0: this thread runs braid's shares itself and the join is by events.
    lane_->submit(std::move(job));
    std::string text;
    if (const Result f = failure(&text); f != Result::Success) return fail(f, "%s", text.c_str());
    return cuda(cudaStreamWaitEvent(stream, e.joined, 0), "cudaStreamWaitEvent (join)");
  }
  if (lane_->submit(std::move(job)) && profile_ != nullptr) profile_->woke();
  mark(CallerProfile::kHandOn);
  BRAID_TRACE(Balance, "multipath: call %llu: NCCL's share queued, braid's handed on", static_cast<unsigned long long>(call_number));
  // The join: braid's shares by the completion word its progress raises (NCCL's is on the stream).
  const CUresult w = cuda::driver().stream_wait_value64(reinterpret_cast<CUstream>(stream), done_device_, call_number,
                                                        CU_STREAM_WAIT_VALUE_GEQ);
  if (w != CUDA_SUCCESS)
    r = fail(Result::UnhandledCudaError, "multipath: cuStreamWaitValue64 (join) failed with %d", static_cast<int>(w));
  mark(CallerProfile::kJoin);
  if (profile_ != nullptr) profile_->end(/*handed_on=*/true);
  if (r != Result::Success) {
    lane_->record_failure(r);
    abort();
  }
  return r;
}

// ---- the progress lane's steps ----

void Orchestrator::release_stuck() {
  // Host stores only: a CUDA call here could block as the lane's thread did.
  done_->store(kReleasedWord);
  abort_transfers();  // the engine's counters its queues wait on, the abort word the peers see
  // The copy engines' streams of every rank wait on each other's signals in the control segment.
  if (copy_engines_ != nullptr && braid_ != nullptr && braid_->engine)
    for (int q = 0; q < nranks_; ++q) braid_->engine->release_path_signals(q);
}

void Orchestrator::on_thread_start() { cudaSetDevice(device_); }

std::string Orchestrator::device_state() const {
  if (copy_engines_ == nullptr || braid_ == nullptr || !braid_->engine) return {};
  std::string state = "the copy engines' signals (calls each rank's GPU reached: inputs ready / peers read)";
  for (int q = 0; q < nranks_; ++q) {
    char part[96];
    std::snprintf(part, sizeof part, " rank %d %llu/%llu", q,
                  static_cast<unsigned long long>(braid_->engine->path_signal(q, peer::kPeerReady)->load()),
                  static_cast<unsigned long long>(braid_->engine->path_signal(q, peer::kPeerReadDone)->load()));
    state += part;
  }
  return state;
}

void Orchestrator::after(LaneJob& lane_job) {
  const Job& job = static_cast<const Job&>(lane_job);
  if (job.runs_on_lane()) give_back_events(job.events);
  refill_events();
}

// After a failure every later split call fails too, so the word goes past any call number; the
// PCIe stream writes it too, after the earlier calls' writes it still holds, which would
// otherwise lower it again.
void Orchestrator::release_waiters() {
  done_->store(kReleasedWord);
  cudaSetDevice(device_);
  if (cuda::driver().stream_write_value64(reinterpret_cast<CUstream>(pcie_stream_), done_device_, kReleasedWord, 0) !=
      CUDA_SUCCESS)
    cudaGetLastError();
}

Result Orchestrator::run_share(LaneJob& lane_job, std::vector<double>* seconds) {
  Job& job = static_cast<Job&>(lane_job);
  BRAID_TRACE(Balance, "multipath: job %llu (%s%s) starts", static_cast<unsigned long long>(job.record.call),
              job.copy_engines() ? "copy engines" : "nccl", job.pcie() ? (job.timed() ? " and pcie, timed" : " and pcie") : "");
  if (!job.runs_on_lane()) return Result::Success;
  BRAID_TRY(cuda(cudaSetDevice(device_), "cudaSetDevice"));
  if (job.timed()) BRAID_TRY(time_fork(job));
  if (job.nccl_on_lane) {
    step("NCCL's share");
    BRAID_TRY(lane_nccl_share(job));
  }
  // The copy engines first: their share only queues once the peers met, and then runs beside the
  // PCIe share, which this thread drives to its end.
  if (job.copy_engines()) {
    step("the copy engines' share: the meeting and the queueing");
    BRAID_TRY(copy_share(job));
  }
  if (job.pcie() || job.copy_moved()) {
    step("the PCIe share: braid's engine");
    BRAID_TRY(pcie_share(job));
  }
  step("the release of the callers' streams");
  BRAID_TRY(release(job));
  BRAID_TRACE(Balance, "multipath: job %llu: braid's shares queued to their end; settling", static_cast<unsigned long long>(job.record.call));
  // A refused or deferred share ran on another path than the split meant: its times would mislead
  // the table.
  if (job.copy_moved()) return Result::Success;
  step("the timing exchange");
  return settle(job, seconds);
}

Result Orchestrator::caller_nvlink_share(const ShareCall& share, ShareRange range, cudaStream_t stream,
                                         SplitRecord* record) {
  if (record->nvlink_copy) {
    // The copy engines meet on a meeting of their own (engine::Communicator::Meeting::Path): the
    // progress thread meets on the engine's at the same time for PCIe shares and their timings.
    // On one meeting the ranks' exchanges paired up wrong ("mismatched collectives" on the rig).
    peer::PeerPath::Outcome outcome = peer::PeerPath::Outcome::Unshareable;
    BRAID_TRY(caller_copy_share(share, range, stream, /*captured=*/false, &outcome));
    cudaSetDevice(device_);
    if (outcome == peer::PeerPath::Outcome::Carried) return Result::Success;
    // Every rank learned it in the same meeting: NCCL carries this share on every rank.
    record->nvlink_copy = false;
    if (!copy_refused_logged_) {
      copy_refused_logged_ = true;
      BRAID_INFO(Balance, "multipath: a rank's buffer of this call is null or cannot be shared with its peers; NCCL "
                 "carries the NVLink share of such calls");
    }
  }
  return enqueue_nccl(*nccl_path_, share, range, stream);
}

Result Orchestrator::caller_copy_share(const ShareCall& share, ShareRange range, cudaStream_t stream, bool captured,
                                       peer::PeerPath::Outcome* outcome) {
  peer::PeerPath::Publication mine;
  copy_engines_->publish(share, range, &mine);
  BRAID_TRY(copy_engines_->run(share, range, mine, stream, outcome, captured));
  if (*outcome != peer::PeerPath::Outcome::Deferred) return Result::Success;
  // Map now and meet again. Only when a call brings a new allocation.
  BRAID_TRY(prepare_copy_engines());
  return copy_engines_->run(share, range, mine, stream, outcome, captured);
}

Result Orchestrator::run_captured(const SplitCall& call, cudaStream_t stream, bool* carried) {
  *carried = false;
  BRAID_TRY(refuse_after_failure());
  if (!copy_engines_take(call) ||
      message_bytes(call, nranks_) < byte_threshold(settings().nvlink_graph_min_bytes))
    return Result::Success;
  const cuda::DeviceScope on_device(device_);
  BRAID_TRY(cuda(on_device.status(), "cudaSetDevice"));
  // Exporting this rank's buffers and mapping the peers' are calls a capture in global or
  // thread-local mode forbids on its thread; they touch no stream.
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  BRAID_TRY(cuda(cudaThreadExchangeStreamCaptureMode(&mode), "cudaThreadExchangeStreamCaptureMode"));
  peer::PeerPath::Outcome outcome = peer::PeerPath::Outcome::Unshareable;
  // With BRAID_NVLINK_ON_LANE the progress thread meets on the same path for earlier calls: it
  // finishes them first, so every rank's meetings keep the calls' order.
  Result r = settings().nvlink_on_lane ? lane_->wait_idle() : Result::Success;
  if (r == Result::Success && copy_engines_->path().needs_preparing()) r = prepare_copy_engines();
  if (r == Result::Success) r = caller_copy_share(share_of(call), ShareRange{0, call.count}, stream, /*captured=*/true, &outcome);
  cudaThreadExchangeStreamCaptureMode(&mode);
  BRAID_TRY(r);
  *carried = outcome == peer::PeerPath::Outcome::Carried;
  static std::once_flag said;
  if (*carried)
    std::call_once(said, [] { BRAID_INFO(Coll, "multipath: calls captured in CUDA graphs ride braid's NVLink path whole"); });
  return Result::Success;
}

Result Orchestrator::prepare_copy_engines() {
  const auto began = std::chrono::steady_clock::now();
  BRAID_TRY(lane_->wait_idle());
  // Mapping and scratch wait for the device; other communicators' progress threads may be busy.
  quiet_lanes("multipath: mapping peers' buffers", kQuietLanesSeconds);
  const Result r = copy_engines_->path().prepare();
  cudaSetDevice(device_);
  BRAID_INFO(Balance, "multipath: the calling thread waited %.1f us for braid's progress and mapped peers' buffers",
             std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count() * 1e6);
  return r;
}

Result Orchestrator::copy_share(Job& job) {
  BRAID_TRY(cuda(cudaStreamWaitEvent(copy_stream_, job.fork(), 0), "cudaStreamWaitEvent (fork)"));
  peer::PeerPath::Outcome outcome = peer::PeerPath::Outcome::Unshareable;
  const Result r =
      copy_engines_->run(job.share, ShareRange{0, job.record.nccl_elements}, job.publication, copy_stream_, &outcome);
  cudaSetDevice(device_);
  BRAID_TRY(r);
  if (outcome != peer::PeerPath::Outcome::Carried) {
    // Every rank learned it in the same meeting: all of them hand the range to PCIe.
    (outcome == peer::PeerPath::Outcome::Deferred ? job.record.copy_deferred : job.record.copy_refused) = true;
    job.record.nvlink_copy = false;
    return Result::Success;
  }
  return cuda(cudaEventRecord(job.events.nccl_end, copy_stream_), "cudaEventRecord (copy engines' end)");
}

bool Orchestrator::nccl_share_on_lane(const SplitCall& call, const LedgerCall& ledger) {
  if (lane_comm_state_ == kLaneCommOff || ledger.pcie_elements == 0 || ledger.dedicated_elements == 0) return false;
  // Operators made on the application's communicator (PreMulSum) exist there alone.
  if (collective_reduces(call.collective) && call.op >= ncclNumOps) return false;
  if (lane_comm_state_ == kLaneCommUntried) make_lane_comm();
  return lane_comm_state_ == kLaneCommReady;
}

// Every rank reaches it at the same call (the split is every rank's), on the calling thread.
void Orchestrator::make_lane_comm() {
  lane_comm_state_ = kLaneCommOff;
  const auto began = std::chrono::steady_clock::now();
  // The exchange below is the engine's, which the progress thread uses to settle calls; and the
  // split allocates (calls that may wait for the device): only once braid's progress is idle.
  // A lane that failed fails this call after; the split still runs, as on the other ranks.
  (void)lane_->wait_idle();
  quiet_lanes("multipath: making NCCL's communicator for braid's progress thread", kQuietLanesSeconds);
  ncclConfig_t config = lane_comm_config(app_config_.get());
  ncclComm_t child = nullptr;
  ncclResult_t made = nccl_.ncclCommSplit(comm_, 0, rank_, &child, &config);
  const auto bound = std::chrono::duration<double>(std::max(1.0, settings().timeout));
  while (made == ncclInProgress && child != nullptr && std::chrono::steady_clock::now() - began < bound) {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    if (nccl_.ncclCommGetAsyncError(child, &made) != ncclSuccess) break;
  }
  cudaSetDevice(device_);
  Result r = made == ncclSuccess && child != nullptr ? Result::Success : Result::InternalError;
  if (r == Result::Success)
    r = cuda(cudaStreamCreateWithFlags(&nccl_stream_, cudaStreamNonBlocking), "cudaStreamCreate (NCCL's share)");
  bool everyone = false;
  const bool mine = r == Result::Success;
  (void)every_rank(mine, engine_exchange(*braid_->engine), &everyone);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - began).count();
  if (!everyone) {
    if (child != nullptr) nccl_.ncclCommAbort(child);
    cudaSetDevice(device_);
    BRAID_INFO(Init, "multipath: rank %d: %s; NCCL's share of split calls stays on the calling thread", rank_,
               mine ? "another rank could not split NCCL's communicator" : "ncclCommSplit failed here");
    return;
  }
  {
    std::lock_guard lock(lane_comm_mutex_);
    lane_comm_ = child;
  }
  lane_nccl_path_ = std::make_unique<NcclSharePath>(child, nccl_, rank_, nranks_, /*copy_based=*/false);
  lane_comm_state_ = kLaneCommReady;
  BRAID_INFO(Init, "multipath: rank %d/%d: NCCL's share of split calls is queued by braid's progress thread, on a "
             "communicator of its own (made in %.1f ms)", rank_, nranks_, ms);
}

Result Orchestrator::enqueue_on_lane_comm(const Job& job, cudaStream_t stream) {
  std::lock_guard lock(lane_comm_mutex_);
  if (lane_comm_ == nullptr) return fail(Result::RemoteError, "multipath: the communicator was aborted");
  const Result r = enqueue_nccl(*lane_nccl_path_, job.share, ShareRange{0, job.record.nccl_elements}, stream);
  cudaSetDevice(device_);
  return r;
}

Result Orchestrator::lane_nccl_share(Job& job) {
  BRAID_TRY(cuda(cudaStreamWaitEvent(nccl_stream_, job.fork(), 0), "cudaStreamWaitEvent (fork)"));
  BRAID_TRY(enqueue_on_lane_comm(job, nccl_stream_));
  return cuda(cudaEventRecord(job.events.nccl_end, nccl_stream_), "cudaEventRecord (NCCL's end)");
}

// PCIe's share: the elements after NVLink's of every block (from the first where the copy engines
// refused theirs), through braid's engine on the private stream, which first waits for the
// caller's stream to reach the call (the fork).
Result Orchestrator::pcie_share(Job& job) {
  const SplitCall& call = job.record.what;
  BRAID_TRY(cuda(cudaStreamWaitEvent(pcie_stream_, job.fork(), 0), "cudaStreamWaitEvent (fork)"));
  if (job.device_scalar != nullptr) {
    // NCCL reads a device scalar while the collective runs; braid once the work before it is done.
    unsigned char bytes[8] = {};
    const DataType type = static_cast<DataType>(call.type);
    BRAID_TRY(cuda(cudaMemcpyAsync(bytes, job.device_scalar, datatype_size(type), cudaMemcpyDeviceToHost, pcie_stream_),
                   "cudaMemcpyAsync (the PreMulSum scalar)"));
    BRAID_TRY(cuda(cudaStreamSynchronize(pcie_stream_), "cudaStreamSynchronize (the PreMulSum scalar)"));
    job.share.scalar = reduce::OpScalar::from_bytes(type, bytes);
  }
  ShareRange range{job.record.nccl_elements, job.record.pcie_elements};
  if (job.copy_moved()) range = ShareRange{0, job.record.nccl_elements + job.record.pcie_elements};
  bool carried = false;
  const Result r = pcie_path_->enqueue(job.share, range, pcie_stream_, &carried);
  cudaSetDevice(device_);
  BRAID_TRY(r);
  if (!carried) return fail(Result::InternalError, "multipath: braid's PCIe path refused its share");
  return cuda(cudaEventRecord(job.events.pcie_end, pcie_stream_), "cudaEventRecord");
}

Result Orchestrator::release(Job& job) {
  // One stream writes every call's word, in call order: the word never goes down.
  if ((job.copy_engines() && !job.copy_moved()) || job.nccl_on_lane)
    BRAID_TRY(cuda(cudaStreamWaitEvent(pcie_stream_, job.events.nccl_end, 0), "cudaStreamWaitEvent (NVLink share)"));
  BRAID_TRY(cuda(cudaEventRecord(job.events.joined, pcie_stream_), "cudaEventRecord (joined)"));
  const CUresult w = cuda::driver().stream_write_value64(reinterpret_cast<CUstream>(pcie_stream_), done_device_,
                                                         job.record.call, 0);
  if (w != CUDA_SUCCESS)
    return fail(Result::UnhandledCudaError, "multipath: cuStreamWriteValue64 (release) failed with %d", static_cast<int>(w));
  return Result::Success;
}

// A timing event costs its caller about 1 us more than a plain one (bench/host_cost_probe.cu), so
// the calling thread records the fork untimed and this thread times it on a stream of its own.
// Once the GPU has passed the fork, a record would come late and shorten both paths' times: the
// call is then not measured, and the calling thread times the next timed calls' forks itself
// until one of them finds the GPU behind again.
Result Orchestrator::time_fork(Job& job) {
  const cudaError_t passed = cudaEventQuery(job.fork());
  if (passed != cudaErrorNotReady && passed != cudaSuccess) BRAID_TRY(cuda(passed, "cudaEventQuery (fork)"));
  cudaGetLastError();  // not ready is no error
  callers_time_forks_.store(passed == cudaSuccess, std::memory_order_relaxed);
  if (job.caller_timed || passed == cudaSuccess) return Result::Success;
  BRAID_TRY(cuda(cudaStreamWaitEvent(timing_stream_, job.events.fork, 0), "cudaStreamWaitEvent (fork time)"));
  BRAID_TRY(cuda(cudaEventRecord(job.events.fork_time, timing_stream_), "cudaEventRecord (fork time)"));
  job.fork_timed = true;
  return Result::Success;
}

// A call's times, once both paths ended: every rank's progress thread settles every split call
// right after its PCIe share, so the exchanges pair up in the same order on every rank. A rank that
// could not time its fork sends kUnmeasured, and then no rank keeps the call's times.
Result Orchestrator::settle(const Job& job, std::vector<double>* seconds) {
  if (!job.timed()) return Result::Success;  // nothing to exchange: the table learns from timed calls only
  const CallEvents& e = job.events;
  uint64_t mine[2] = {kUnmeasured, kUnmeasured};
  if (job.fork_timed) {
    float nccl_ms = 0, pcie_ms = 0;
    BRAID_TRY(cuda(cudaEventSynchronize(e.pcie_end), "cudaEventSynchronize"));
    BRAID_TRY(cuda(cudaEventSynchronize(e.nccl_end), "cudaEventSynchronize"));
    BRAID_TRY(cuda(cudaEventSynchronize(e.fork_time), "cudaEventSynchronize"));
    if (job.record.nccl_elements > 0)
      BRAID_TRY(cuda(cudaEventElapsedTime(&nccl_ms, e.fork_time, e.nccl_end), "cudaEventElapsedTime"));
    BRAID_TRY(cuda(cudaEventElapsedTime(&pcie_ms, e.fork_time, e.pcie_end), "cudaEventElapsedTime"));
    mine[0] = static_cast<uint64_t>(std::max(0.f, nccl_ms) * 1e6);
    mine[1] = static_cast<uint64_t>(std::max(0.f, pcie_ms) * 1e6);
  }
  std::vector<uint64_t> all;
  BRAID_TRY(braid_->engine->exchange(mine, &all));
  all.resize(static_cast<size_t>(nranks_) * 2, 0);
  *seconds = agreed_seconds(all);
  return Result::Success;
}

void Orchestrator::trace_declined(const SplitCall& call, const char* reason) {
  if (trace_ == nullptr) return;
  // One fprintf per line: stdio locks the FILE, so lines of several threads stay whole.
  std::fprintf(trace_, "{\"declined\": \"%s\", \"collective\": \"%s\", \"dtype\": \"%s\", \"bytes\": %zu, \"count\": %zu}\n",
               reason, std::string(collective_name(call.collective)).c_str(),
               std::string(datatype_name(static_cast<DataType>(call.type))).c_str(), message_bytes(call, nranks_),
               call.count);
  std::fflush(trace_);
}

void Orchestrator::trace(const SplitRecord& r) {
  if (trace_ == nullptr) return;
  std::fprintf(trace_,
               "{\"call\": %llu, \"collective\": \"%s\", \"dtype\": \"%s\", \"bytes\": %zu, \"count\": %zu, "
               "\"nccl_elements\": %zu, \"pcie_elements\": %zu, \"pcie_share\": %.6f, \"nccl_ms\": %.4f, "
               "\"pcie_ms\": %.4f, \"timed\": %s, \"next_pcie_share\": %.6f, \"nvlink_path\": \"%s\", "
               "\"caller_us\": %.1f}\n",
               static_cast<unsigned long long>(r.call), std::string(collective_name(r.what.collective)).c_str(),
               std::string(datatype_name(static_cast<DataType>(r.what.type))).c_str(), r.bytes, r.what.count,
               r.nccl_elements, r.pcie_elements,
               r.what.count ? static_cast<double>(r.pcie_elements) / static_cast<double>(r.what.count) : 0.0,
               r.nccl_seconds * 1e3, r.pcie_seconds * 1e3, r.timed ? "true" : "false", r.next_pcie_share,
               r.nvlink_copy ? "copy" : "nccl", r.caller_seconds * 1e6);
  std::fflush(trace_);
}

}  // namespace braid::multipath
