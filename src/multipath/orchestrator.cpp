#include "multipath/orchestrator.h"

#include <cuda.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <new>
#include <string>
#include <thread>

#include "cuda/device_scope.h"
#include "cuda/driver_calls.h"
#include "api/comm.h"
#include "api/from_nccl.h"
#include "balance/shares.h"
#include "balance/tuning_cache.h"
#include "common/log.h"
#include "device/backoff.h"
#include "engine/communicator.h"
#include "multipath/nccl_share_path.h"
#include "multipath/peer_share_path.h"
#include "peer/peer_path.h"

namespace braid::multipath {

namespace {

// Split offsets are multiples of 4 KiB, so both shares start on a page and DMA stays aligned.
constexpr size_t kSplitAlignBytes = 4096;

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

Result Orchestrator::create(ncclComm_t comm, const nccl::NcclCalls& nccl, std::unique_ptr<Orchestrator>* out,
                            const PathsAdmitted* admitted, const OrchestratorOptions* agreed_by) {
  out->reset();
  if (!nccl.can_split()) return fail(Result::InternalError, "multipath: NCCL entry points missing");
  std::unique_ptr<Orchestrator> o(new Orchestrator());
  o->comm_ = comm;
  o->nccl_ = nccl;
  o->options_ = agreed_by != nullptr ? *agreed_by : OrchestratorOptions::from_settings();
  // braid's engine here serves the copy engines' meetings and signals only: no staging, worker
  // threads or device scratch. The PCIe share's engine is made at the first call that has one.
  BRAID_TRY(api::init_from_nccl(&o->braid_, comm, nccl, engine::CommunicatorOptions{.host_path = false}));
  o->rank_ = o->braid_->rank;
  o->nranks_ = o->braid_->nranks;
  o->device_ = o->braid_->device;
  int previous = 0;
  BRAID_TRY(o->cuda(cudaGetDevice(&previous), "cudaGetDevice"));
  BRAID_TRY(o->cuda(cudaSetDevice(o->device_), "cudaSetDevice"));
  // Two words the caller's stream writes for timed calls (stamp()): pinned and mapped.
  void* stamps = nullptr;
  Result r = o->cuda(cudaHostAlloc(&stamps, sizeof(std::atomic<uint64_t>) * kStamps, cudaHostAllocMapped | cudaHostAllocPortable),
                     "cudaHostAlloc (the timing stamps)");
  if (r == Result::Success) {
    o->stamps_ = static_cast<std::atomic<uint64_t>*>(stamps);
    for (int i = 0; i < kStamps; ++i) new (&o->stamps_[i]) std::atomic<uint64_t>(0);
    void* device = nullptr;
    r = o->cuda(cudaHostGetDevicePointer(&device, stamps, 0), "cudaHostGetDevicePointer");
    o->stamps_device_ = reinterpret_cast<unsigned long long>(device);
  }
  if (r == Result::Success && !cuda::driver().complete())
    r = fail(Result::UnhandledCudaError, "multipath: the CUDA driver lacks the stream memory operations braid needs");
  cudaSetDevice(previous);
  BRAID_TRY(r);

  const OrchestratorOptions& options = o->options_;
  const bool nvlink = o->braid_->engine->topology().has_nvlink();
  // Where the ranks did not agree on paths (braid-bench), this rank's own rule (paths_admitted.h:
  // by default two GPUs sharing NVLink, where it was measured to pay).
  const bool copy_engines = admitted != nullptr ? admitted->copy_engines_admitted()
                                                : admit_paths(options.facts(o->nranks_, nvlink)).copy_engines_admitted();
  if (copy_engines) {
    // Collective: every rank learns the same answer. The caller's device is restored after.
    std::unique_ptr<peer::PeerPath> peer;
    const Result made = peer::PeerPath::create(o->braid_, &peer);
    cudaSetDevice(previous);
    if (made == Result::Success) o->copy_engines_ = std::make_unique<PeerSharePath>(std::move(peer));
    if (made != Result::Success && options.nvlink_path == "copy")
      BRAID_WARN(Init, "multipath: BRAID_NVLINK_PATH=copy, but %s; NCCL carries the NVLink share", last_error());
    else if (made != Result::Success)
      BRAID_INFO(Init, "multipath: no copy-engine NVLink path (%s); NCCL carries the NVLink share", last_error());
  }

  o->nccl_path_ = std::make_unique<NcclSharePath>(comm, nccl, o->rank_, o->nranks_, options.nccl_share_by_copy);

  std::unique_ptr<balance::Balancer> balancer;
  BRAID_TRY(balance::make_balancer_from_settings(2, &balancer));
  const size_t min_bytes = options.pcie_share_min_bytes(nvlink);
  const bool async = options.async;
  const uint64_t lag = options.settle_lag;
  o->ledger_ = std::make_unique<SplitLedger>(
      std::make_unique<balance::SplitTable>(std::move(balancer), min_bytes),
      o->nranks_, lag, kSplitAlignBytes);
  if (admitted != nullptr && !admitted->pcie_share_admitted()) {
    o->ledger_->keep_to_dedicated_path();
    BRAID_INFO(Init, "multipath: braid's PCIe share is off, the NVLink share alone runs: %s",
               std::string(refusal_text(admitted->pcie_share)).c_str());
  }
  if (!options.tuning_cache.empty()) {
    const size_t restored = balance::load_tuning_cache(o->ledger_->table(), options.tuning_cache);
    BRAID_INFO(Balance, "multipath: %zu learned splits restored from %s", restored, options.tuning_cache.c_str());
  }
  // `braid run --trace` removes the file before the run.
  if (o->rank_ == 0) o->trace_.open(options.split_trace);
  BRAID_INFO(Init, "multipath: rank %d/%d on GPU %d splits collectives of %lld bytes and more across "
             "NVLink (%s) and braid's PCIe path (balancer %s)", o->rank_, o->nranks_, o->device_,
             static_cast<long long>(min_bytes), o->copy_engines_ ? "AllGather and AllReduce on braid's own path, the rest on NCCL" : "NCCL",
             std::string(o->ledger_->table().balancer_name()).c_str());
  // The progress thread is made with the first job handed to it (a call with a PCIe share).
  o->lane_ = std::make_unique<ProgressLane>(static_cast<LaneSteps*>(o.get()), o->ledger_.get(), async);
  o->say_footprint(o->braid_, "braid's meetings and signals");
  if (options.caller_profile) o->profile_ = std::make_unique<CallerProfile>();
  *out = std::move(o);
  return Result::Success;
}

void Orchestrator::use_balancer(std::unique_ptr<balance::Balancer> balancer) {
  ledger_->replace_table(std::make_unique<balance::SplitTable>(std::move(balancer), ledger_->table().split_min_bytes()));
}

void Orchestrator::abort() {
  aborted_.store(true);
  if (lane_) lane_->abort();  // made last in create(): before it, nothing runs to abort
  abort_transfers();           // the device work queued ahead waits for meetings that will not come
}

void Orchestrator::abort_transfers() {
  if (braid_ != nullptr && braid_->engine) braid_->engine->abort();
  if (braidComm_t pcie = pcie_.load(std::memory_order_acquire); pcie != nullptr && pcie->engine) pcie->engine->abort();
}

void Orchestrator::say_footprint(braidComm_t comm, const char* what) const {
  const engine::Communicator::Footprint held = comm->engine->footprint();
  BRAID_INFO(Init, "multipath: rank %d/%d: %s hold %zu bytes of pinned host memory, %zu bytes of device scratch and %d "
             "worker threads%s", rank_, nranks_, what, held.pinned_bytes, held.device_bytes, held.threads,
             comm == braid_ && !ledger_->dedicated_only() ? " (the PCIe share's engine and progress thread are made at "
             "its first call)" : "");
}

Result Orchestrator::make_pcie_engine() {
  // Collective: every rank reaches it at the same call (the ledger's replicas agree), and every
  // rank learns whether every rank made it, so that all split or none does.
  braidComm_t made = nullptr;
  Result r = [&] {
    const FailuresReportedByCaller once;  // the WARN below says why, once
    return api::init_from_nccl(&made, comm_, nccl_, engine::CommunicatorOptions{.host_path = true});
  }();
  const std::string why = r == Result::Success ? std::string() : last_error();
  int32_t refused = r == Result::Success ? 0 : 1;
  const Result agreed =
      api::ranks_maximum(comm_, nccl_, std::span<int32_t>(&refused, 1), "the PCIe engines' readiness (ncclAllReduce max)");
  cudaSetDevice(device_);
  if (agreed != Result::Success) {
    if (made != nullptr) braidCommDestroy(made);
    return agreed;  // NCCL itself failed: the call answers with its error
  }
  if (refused != 0) {
    if (made != nullptr) braidCommDestroy(made);
    BRAID_WARN(Init, "multipath: rank %d/%d: %s; braid's PCIe share is off on this communicator, NVLink carries every call",
               rank_, nranks_, why.empty() ? "another rank could not make braid's PCIe engine" : why.c_str());
    ledger_->keep_to_dedicated_path();
    return Result::Success;
  }
  pcie_.store(made, std::memory_order_release);
  say_footprint(made, "braid's PCIe share and its engine");
  return Result::Success;
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
  if (braid_ != nullptr) {
    cudaSetDevice(device_);
    if (rank_ == 0 && ledger_ && !options_.tuning_cache.empty())
      balance::save_tuning_cache(ledger_->table(), options_.tuning_cache);
  }
  // Before braid's communicator, which the paths use.
  copy_engines_.reset();
  nccl_path_.reset();
  if (stamps_ != nullptr) cudaFreeHost(stamps_);
  if (braidComm_t pcie = pcie_.exchange(nullptr); pcie != nullptr) braidCommDestroy(pcie);
  if (braid_ != nullptr) braidCommDestroy(braid_);
}

bool Orchestrator::takes(const nccl::Call& call) const {
  if (copy_engines_take(call)) return true;
  return message_bytes(call, nranks_) >= ledger_->table().split_min_bytes();
}

bool Orchestrator::copy_engines_take(const nccl::Call& call) const {
  // AllReduce's NVLink path is a kernel on the GPU's SMs: beside a backward pass it cost DDP more
  // than it gained (docs/PERFORMANCE.md), so it has a threshold of its own.
  const size_t copy_min = call.collective() == Collective::AllReduce ? options_.nvlink_allreduce_min_bytes
                                                                   : options_.nvlink_copy_min_bytes;
  return rides_copy_engines(call) && message_bytes(call, nranks_) >= copy_min;
}

// Operators made on the communicator (PreMulSum) have values from ncclNumOps on.
static RedOp builtin_or_premulsum(ncclRedOp_t op) {
  return op < ncclNumOps ? static_cast<RedOp>(op) : RedOp::PreMulSum;
}

// The call with its operator as braid names it, resolved no further (the share's scalar comes later).
static ShareCall share_of(const nccl::Call& call) {
  ShareCall share;
  share.call = call;
  share.op = builtin_or_premulsum(call.op);
  return share;
}

bool Orchestrator::rides_copy_engines(const nccl::Call& call) const {
  return copy_engines_ != nullptr && copy_engines_->carries(share_of(call));
}

// ---- the calling thread ----

Result Orchestrator::failure(std::string* text) const { return lane_ ? lane_->failure(text) : Result::Success; }

Result Orchestrator::refuse_after_failure() const {
  std::string text;
  if (const Result f = failure(&text); f != Result::Success)
    return fail(f, "multipath: braid's PCIe path failed earlier on this communicator: %s", text.c_str());
  return Result::Success;
}

Result Orchestrator::apply_settled(uint64_t call, bool beyond_lag) {
  return lane_->apply_through(call, beyond_lag, [this](LaneJob& job, const std::vector<double>& seconds, double next_share) {
    record_applied(job, seconds, next_share);
  });
}

void Orchestrator::record_applied(LaneJob& job, const std::vector<double>& seconds, double next_share) {
  SplitRecord& r = static_cast<Job&>(job).record;
  if (const CallerPart& caller = *static_cast<Job&>(job).caller; r.pcie_elements > 0) {
    // The calling thread's outcomes, written after the hand-on (read here, on that thread).
    r.nvlink_copy = caller.nvlink_copy;
    r.caller_seconds = caller.caller_seconds;
  }
  r.next_pcie_share = next_share;
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
             std::string(collective_name(r.what.collective())).c_str(), std::string(datatype_name(type)).c_str(),
             op_text(r.what.op).c_str(), r.bytes, static_cast<unsigned long long>(r.call),
             r.nvlink_copy ? "braid" : "nccl", r.nccl_elements, r.pcie_elements, r.nccl_seconds * 1e3,
             r.pcie_seconds * 1e3, r.next_pcie_share, r.caller_seconds * 1e6);
  trace_.settled(r);
  if (keep_history_) history_.push_back(r);
}

// apply_settled waits for each call's record in turn: nothing to wait for first.
Result Orchestrator::drain() { return apply_settled(ledger_->calls(), true); }

uint64_t Orchestrator::calls() const { return ledger_->calls(); }

Result Orchestrator::run(const nccl::Call& call, cudaStream_t stream, CallerProfile::Clock::time_point entered) {
  const auto began = entered != CallerProfile::Clock::time_point{} ? entered : CallerProfile::Clock::now();
  const auto caller_seconds = [&] { return std::chrono::duration<double>(CallerProfile::Clock::now() - began).count(); };
  if (profile_ != nullptr) profile_->begin(began);
  mark(CallerProfile::kShim);
  BRAID_TRY(refuse_after_failure());
  // The caller's current device is the caller's (one thread may drive several GPUs): restored.
  const cuda::DeviceScope on_device(device_);
  BRAID_TRY(cuda(on_device.status(), "cudaSetDevice"));

  // Call k's split uses the times of calls up to k - lag, the same on every rank; the calling
  // thread waits only when braid's progress is that far behind.
  mark(CallerProfile::kScope);
  BRAID_TRY(apply_settled(ledger_->must_apply_through()));
  mark(CallerProfile::kSettle);
  auto job = std::make_unique<Job>();
  const DataType type = static_cast<DataType>(call.type);
  job->record.what = call;
  job->record.bytes = message_bytes(call, nranks_);
  BRAID_TRY(ledger_->next(call.collective(), type, job->record.bytes, call.count, &job->ledger));
  // braid's PCIe engine (pinned staging, workers, device scratch, the progress thread) is paid for
  // at the first call that gives the PCIe path elements, the same call on every rank.
  const Result engine_ready = job->pcie() && pcie_.load(std::memory_order_relaxed) == nullptr ? make_pcie_engine() : Result::Success;
  if (engine_ready == Result::Success && job->pcie() && ledger_->dedicated_only()) {
    // No rank made it: this call, like every later one, goes to NVLink alone on every rank.
    job->ledger.dedicated_elements = call.count;
    job->ledger.pcie_elements = 0;
    job->ledger.timed = false;
  }
  const uint64_t call_number = job->ledger.call;
  const size_t nccl_elements = job->ledger.dedicated_elements;
  job->record.call = call_number;
  job->record.nccl_elements = nccl_elements;
  job->record.pcie_elements = job->ledger.pcie_elements;
  job->record.nvlink_copy = nccl_elements > 0 && rides_copy_engines(call);
  job->share = share_of(call);
  if (engine_ready != Result::Success) {
    // NCCL itself failed the ranks' agreement: the call answers with its error.
    lane_->settle_at_once(std::move(job));
    if (profile_ != nullptr) profile_->end(/*handed_on=*/false);
    return engine_ready;
  }
  BRAID_TRACE(Balance, "multipath: call %llu: settled calls applied through %llu", static_cast<unsigned long long>(call_number),
              static_cast<unsigned long long>(ledger_->applied()));
  // The ledger counted this call: from here it is settled whatever happens, or every later call
  // would wait for it. A call the NVLink path alone carries is settled at once, by the calling
  // thread: its record meets no other rank (only calls with a PCIe share exchange times).
  if (!job->pcie()) {
    mark(CallerProfile::kPrepare);
    const Result r = caller_nvlink_share(job->share, ShareRange{0, call.count}, stream, &job->record.nvlink_copy);
    mark(CallerProfile::kNccl);
    job->record.caller_seconds = caller_seconds();
    lane_->settle_at_once(std::move(job));
    mark(CallerProfile::kHandOn);
    if (profile_ != nullptr) profile_->end(/*handed_on=*/false);
    return r;
  }
  mark(CallerProfile::kPrepare);
  // This thread queues every GPU operation of the call, as NCCL's calling thread does; the progress
  // thread only meets the ranks, reduces on the host and writes host words (docs/MULTIPATH.md,
  // "One call"). The PCIe share is planned first (host work only) and its host half handed on
  // before any of its GPU work is queued: from the first queued operation the GPU waits for the
  // ranks' meeting, which must never wait for this thread, since an application thread may hold
  // CUDA's lock while it waits for the device and stop this thread's next CUDA call.
  const engine::BlockRange pcie_range{nccl_elements, job->ledger.pcie_elements};
  braidComm_t pcie = pcie_.load(std::memory_order_relaxed);
  Result r = pcie->engine->plan(call.collective(), call.send, call.recv, call.count, type, job->share.op, call.root,
                                  pcie_range, &job->caller->queued);
  if (r != Result::Success) {
    lane_->settle_at_once(std::move(job));
    if (profile_ != nullptr) profile_->end(/*handed_on=*/false);
    if (r == Result::RemoteError) BRAID_TRY(refuse_after_failure());
    return r;
  }
  if (!said_pcie_share_) {
    said_pcie_share_ = true;
    BRAID_INFO(Balance, "multipath: rank %d/%d: call %llu (%s, %zu bytes) is the first with a PCIe share: elements %zu+%zu "
               "of every block through braid's engine, every GPU operation queued by the calling thread",
               rank_, nranks_, static_cast<unsigned long long>(call_number), std::string(collective_name(call.collective())).c_str(),
               job->record.bytes, nccl_elements, job->ledger.pcie_elements);
  }
  const std::shared_ptr<CallerPart> mine = job->caller;  // the lane owns the job from here
  mine->nvlink_copy = job->record.nvlink_copy;
  const bool timed = job->timed();
  const ShareCall share = job->share;
  bool woke = false;
  // BRAID_ASYNC=0 completes the call inside submit(), on this thread: its GPU work first.
  if (lane_->async()) woke = lane_->submit(std::move(job));
  pcie->backend->set_user_stream(stream);
  r = pcie->engine->issue(mine->queued);  // the fork, then the share's copies, gated on the meeting
  if (r == Result::Success && timed) r = stamp(stream, kForkStamp, call_number);
  mark(CallerProfile::kFork);
  if (r == Result::Success && nccl_elements > 0) r = caller_nvlink_share(share, ShareRange{0, nccl_elements}, stream, &mine->nvlink_copy);
  if (r == Result::Success && timed) r = stamp(stream, kNvlinkStamp, call_number);
  mark(CallerProfile::kNccl);
  // The join: the caller's stream waits for the PCIe share's queues (events).
  if (r == Result::Success) r = pcie->engine->join_queued();
  mark(CallerProfile::kJoin);
  if (r == Result::Success) mine->caller_seconds = caller_seconds();
  if (!lane_->async()) lane_->submit(std::move(job));
  mark(CallerProfile::kHandOn);
  if (profile_ != nullptr) {
    if (woke) profile_->woke();
    profile_->end(/*handed_on=*/true);
  }
  if (r != Result::Success) {
    // The call's GPU work waits for a meeting that cannot complete it: every rank stops.
    const std::string text = last_error();
    abort();
    return fail(r, "%s", text.c_str());
  }
  BRAID_TRACE(Balance, "multipath: call %llu: every GPU operation queued, the host work handed on",
              static_cast<unsigned long long>(call_number));
  if (!lane_->async()) {
    // BRAID_ASYNC=0: this thread ran braid's host work itself.
    std::string text;
    if (const Result f = failure(&text); f != Result::Success) return fail(f, "%s", text.c_str());
  }
  return Result::Success;
}

// One word of the stamps, written by the caller's stream when it passes this point.
Result Orchestrator::stamp(cudaStream_t stream, int which, uint64_t call) {
  const CUresult w = cuda::driver().stream_write_value64(reinterpret_cast<CUstream>(stream),
                                                         stamps_device_ + which * sizeof(uint64_t), call, 0);
  if (w != CUDA_SUCCESS)
    return fail(Result::UnhandledCudaError, "multipath: cuStreamWriteValue64 (a timing stamp) failed with %d", static_cast<int>(w));
  return Result::Success;
}

// ---- the progress lane's steps ----

void Orchestrator::release_stuck() {
  // Host stores only: the engine's counters and go words its queues wait on, the abort word the
  // peers see.
  abort_transfers();
  // The copy engines' streams of every rank wait on each other's signals in the control segment.
  if (copy_engines_ != nullptr && braid_ != nullptr && braid_->engine)
    for (int q = 0; q < nranks_; ++q) braid_->engine->release_path_signals(q);
}

std::string Orchestrator::device_state() const {
  if (copy_engines_ == nullptr || braid_ == nullptr || !braid_->engine) return {};
  std::string state =
      "the copy engines' signals (the bit of the last call each rank's GPU reached, 2 for an odd call, 1 for an even "
      "one, 0 for none: inputs ready / peers read)";
  for (int q = 0; q < nranks_; ++q) {
    char part[96];
    std::snprintf(part, sizeof part, " rank %d %llu/%llu", q,
                  static_cast<unsigned long long>(braid_->engine->path_signal(q, peer::kPeerReady)->load()),
                  static_cast<unsigned long long>(braid_->engine->path_signal(q, peer::kPeerReadDone)->load()));
    state += part;
  }
  return state;
}

// After a failure every later split call fails too; the device work already queued for them
// waits for meetings that will not happen: released by host stores.
void Orchestrator::release_waiters() { abort_transfers(); }

Result Orchestrator::run_share(LaneJob& lane_job, std::vector<double>* seconds) {
  Job& job = static_cast<Job&>(lane_job);
  BRAID_TRACE(Balance, "multipath: job %llu (pcie%s) starts", static_cast<unsigned long long>(job.record.call),
              job.timed() ? ", timed" : "");
  if (!job.pcie()) return Result::Success;
  step("the PCIe share: braid's engine");
  // A timed call's paths are timed from when the caller's stream passed the fork to the stamps
  // (the NVLink share's end, written by the stream) and the PCIe share's last write, as this thread
  // sees them. Where the GPU passed the fork before this thread looked, the call is not measured.
  using Clock = std::chrono::steady_clock;
  const uint64_t call = job.record.call;
  Clock::time_point fork_at{}, nvlink_at{};
  const auto look = [&] {
    if (fork_at == Clock::time_point{} && stamps_[kForkStamp].load(std::memory_order_acquire) >= call)
      fork_at = Clock::now();
    if (nvlink_at == Clock::time_point{} && stamps_[kNvlinkStamp].load(std::memory_order_acquire) >= call)
      nvlink_at = Clock::now();
  };
  const bool measured = job.timed() && stamps_[kForkStamp].load(std::memory_order_acquire) < call;
  engine::Communicator& engine = *pcie_.load(std::memory_order_acquire)->engine;
  BRAID_TRY(engine.complete(job.caller->queued, measured ? std::function<void()>(look) : std::function<void()>()));
  const Clock::time_point pcie_at = Clock::now();
  if (!job.timed()) return Result::Success;
  step("the timing exchange");
  uint64_t mine[2] = {kUnmeasured, kUnmeasured};
  if (measured) {
    // The NVLink share may end after the PCIe share: wait for its stamp, bounded.
    device::Backoff backoff;
    while (nvlink_at == Clock::time_point{} && std::chrono::duration<double>(Clock::now() - pcie_at).count() < options_.timeout) {
      look();
      backoff.pause();
    }
    if (fork_at != Clock::time_point{} && nvlink_at != Clock::time_point{}) {
      const auto ns = [&](Clock::time_point end) {
        return static_cast<uint64_t>(std::max<int64_t>(0, std::chrono::duration_cast<std::chrono::nanoseconds>(end - fork_at).count()));
      };
      mine[0] = job.record.nccl_elements > 0 ? ns(nvlink_at) : 0;
      mine[1] = ns(pcie_at);
    }
  }
  std::vector<uint64_t> all;
  BRAID_TRY(engine.exchange(mine, &all));
  all.resize(static_cast<size_t>(nranks_) * 2, 0);
  *seconds = agreed_seconds(all);
  return Result::Success;
}

Result Orchestrator::caller_nvlink_share(const ShareCall& share, ShareRange range, cudaStream_t stream,
                                         bool* nvlink_copy) {
  if (*nvlink_copy) {
    // The copy engines meet on a meeting of their own (engine::Communicator::Meeting::Path): the
    // progress thread meets on the engine's at the same time for PCIe shares and their timings.
    // On one meeting the ranks' exchanges paired up wrong ("mismatched collectives" on the rig).
    peer::PeerPath::Outcome outcome = peer::PeerPath::Outcome::Unshareable;
    BRAID_TRY(caller_copy_share(share, range, stream, /*captured=*/false, &outcome));
    cudaSetDevice(device_);
    if (outcome == peer::PeerPath::Outcome::Carried) return Result::Success;
    // Every rank learned it in the same meeting: NCCL carries this share on every rank.
    *nvlink_copy = false;
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
  // The profile (BRAID_CALLER_PROFILE) times split calls outside graphs only.
  const std::function<void()> met = [&] {
    if (!captured) mark(CallerProfile::kMeet);
  };
  peer::PeerPath::Publication mine;
  copy_engines_->publish(share, range, &mine);
  if (!captured) mark(CallerProfile::kPublish);
  return copy_engines_->run(share, range, mine, stream, outcome, captured, met);
}

Result Orchestrator::run_captured(const nccl::Call& call, cudaStream_t stream, bool* carried) {
  *carried = false;
  BRAID_TRY(refuse_after_failure());
  if (!copy_engines_take(call) ||
      message_bytes(call, nranks_) < options_.nvlink_graph_min_bytes)
    return Result::Success;
  const cuda::DeviceScope on_device(device_);
  BRAID_TRY(cuda(on_device.status(), "cudaSetDevice"));
  // Exporting this rank's buffers and mapping the peers' are calls a capture in global or
  // thread-local mode forbids on its thread; they touch no stream.
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  BRAID_TRY(cuda(cudaThreadExchangeStreamCaptureMode(&mode), "cudaThreadExchangeStreamCaptureMode"));
  peer::PeerPath::Outcome outcome = peer::PeerPath::Outcome::Unshareable;
  const Result r = caller_copy_share(share_of(call), ShareRange{0, call.count}, stream, /*captured=*/true, &outcome);
  cudaThreadExchangeStreamCaptureMode(&mode);
  BRAID_TRY(r);
  *carried = outcome == peer::PeerPath::Outcome::Carried;
  static std::once_flag said;
  if (*carried)
    std::call_once(said, [] { BRAID_INFO(Coll, "multipath: calls captured in CUDA graphs ride braid's NVLink path whole"); });
  return Result::Success;
}

void Orchestrator::trace_declined(const nccl::Call& call, const char* reason) { trace_.declined(call, nranks_, reason); }

}  // namespace braid::multipath
