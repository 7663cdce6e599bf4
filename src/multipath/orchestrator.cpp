#include "multipath/orchestrator.h"

#include <algorithm>
#include <string>

#include "api/call.h"
#include "api/comm.h"
#include "api/nccl_calls.h"
#include "balance/shares.h"
#include "balance/tuning_cache.h"
#include "common/log.h"
#include "common/settings.h"

namespace braid::multipath {

namespace {

// Split offsets are multiples of 4 KiB, so both shares start on a page and DMA stays aligned.
constexpr size_t kSplitAlignBytes = 4096;
// A call's per-path times are read during the next split call (see settle_one): at most one call
// is pending, so three event sets (pending, current, one spare) suffice.
constexpr int kTimingSlots = 3;

// Dynamic operators (ncclRedOpCreatePreMulSum) are numbered from ncclNumOps = RedOp::PreMulSum.
std::string op_text(ncclRedOp_t op) {
  return std::string(redop_name(static_cast<RedOp>(std::min<int>(op, ncclNumOps))));
}

}  // namespace

Result Orchestrator::cuda(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return Result::Success;
  return fail(Result::UnhandledCudaError, "multipath (GPU %d): %s: %s", device_, what, cudaGetErrorString(e));
}

Result Orchestrator::nccl_result(ncclResult_t r, const char* what) {
  if (r == ncclSuccess) return Result::Success;
  const char* text = nccl_.bootstrap.get_error_string ? nccl_.bootstrap.get_error_string(r) : "";
  return fail(static_cast<Result>(r), "multipath: NCCL's share (%s) failed: %s", what, text);
}

Result Orchestrator::create(ncclComm_t comm, const NcclEntryPoints& nccl, std::unique_ptr<Orchestrator>* out) {
  out->reset();
  if (!nccl.complete()) return fail(Result::InternalError, "multipath: NCCL entry points missing");
  std::unique_ptr<Orchestrator> o(new Orchestrator());
  o->comm_ = comm;
  o->nccl_ = nccl;
  BRAID_TRY(api::init_from_nccl(&o->braid_, comm, nccl.bootstrap));
  o->rank_ = o->braid_->rank;
  o->nranks_ = o->braid_->nranks;
  o->device_ = o->braid_->device;
  int previous = 0;
  BRAID_TRY(o->cuda(cudaGetDevice(&previous), "cudaGetDevice"));
  BRAID_TRY(o->cuda(cudaSetDevice(o->device_), "cudaSetDevice"));
  Result r = o->cuda(cudaStreamCreateWithFlags(&o->nccl_stream_, cudaStreamNonBlocking), "cudaStreamCreate");
  if (r == Result::Success)
    r = o->cuda(cudaStreamCreateWithFlags(&o->pcie_stream_, cudaStreamNonBlocking), "cudaStreamCreate");
  for (int i = 0; i < kTimingSlots && r == Result::Success; ++i) {
    Timing t;
    r = o->cuda(cudaEventCreate(&t.fork), "cudaEventCreate");
    if (r == Result::Success) r = o->cuda(cudaEventCreate(&t.nccl_end), "cudaEventCreate");
    if (r == Result::Success) r = o->cuda(cudaEventCreate(&t.pcie_end), "cudaEventCreate");
    o->timings_.push_back(t);
  }
  cudaSetDevice(previous);
  BRAID_TRY(r);

  const std::string& share_mode = settings().split_nccl_share;
  if (share_mode != "inplace" && share_mode != "copy")
    return fail(Result::InvalidArgument, "BRAID_SPLIT_NCCL_SHARE '%s' unknown: use inplace or copy",
                share_mode.c_str());
  o->copy_based_ = share_mode == "copy";
  const std::string& nvlink_path = settings().nvlink_path;
  if (nvlink_path != "nccl" && nvlink_path != "copy" && nvlink_path != "auto")
    return fail(Result::InvalidArgument, "BRAID_NVLINK_PATH '%s' unknown: use auto, copy or nccl",
                nvlink_path.c_str());
  bool nvlink = false;
  for (const auto& link : o->braid_->engine->topology().links) nvlink |= link.kind == topo::LinkKind::NvLink;
  // auto: only where the GPUs share NVLink (peer copies between GPUs on PCIe alone are unmeasured).
  if (nvlink_path == "copy" || (nvlink_path == "auto" && nvlink)) {
    // Collective: every rank learns the same answer. The caller's device is restored after.
    const Result made = peer::PeerPath::create(o->braid_, &o->peer_);
    cudaSetDevice(previous);
    if (made != Result::Success && nvlink_path == "copy")
      BRAID_WARN(Init, "multipath: BRAID_NVLINK_PATH=copy, but %s; NCCL carries the NVLink share", last_error());
    else if (made != Result::Success)
      BRAID_INFO(Init, "multipath: no copy-engine NVLink path (%s); NCCL carries the NVLink share", last_error());
  }

  std::unique_ptr<balance::Balancer> balancer;
  BRAID_TRY(balance::make_balancer_from_settings(2, &balancer));
  int64_t min_bytes = settings().split_min_bytes;
  if (min_bytes <= 0) {
    // Auto: where the GPUs share NVLink, NCCL alone finishes a 64 MB all_reduce in 0.25 ms, about
    // the PCIe path's fixed latency (~0.23 ms on 2x H200), so only larger ones can gain
    // (docs/PERFORMANCE.md). Without NVLink, HyLink's S_min of 1 MB.
    min_bytes = nvlink ? (int64_t{128} << 20) : (int64_t{1} << 20);
  }
  o->table_ = std::make_unique<balance::SplitTable>(std::move(balancer),
                                                    static_cast<size_t>(std::max<int64_t>(min_bytes, 1)));
  if (!settings().tuning_cache.empty()) {
    const size_t restored = balance::load_tuning_cache(*o->table_, settings().tuning_cache);
    BRAID_INFO(Balance, "multipath: %zu learned splits restored from %s", restored,
               settings().tuning_cache.c_str());
  }
  if (!settings().split_trace.empty() && o->rank_ == 0) {
    o->trace_ = std::fopen(settings().split_trace.c_str(), "w");
    if (o->trace_ == nullptr)
      BRAID_WARN(Balance, "multipath: cannot write the split trace %s", settings().split_trace.c_str());
  }
  BRAID_INFO(Init, "multipath: rank %d/%d on GPU %d splits collectives of %lld bytes and more across "
             "NVLink (%s) and braid's PCIe path (balancer %s)", o->rank_, o->nranks_, o->device_,
             static_cast<long long>(min_bytes), o->peer_ ? "AllGather and AllReduce on braid's own path, the rest on NCCL" : "NCCL",
             std::string(o->table_->balancer_name()).c_str());
  *out = std::move(o);
  return Result::Success;
}

void Orchestrator::use_balancer(std::unique_ptr<balance::Balancer> balancer) {
  table_ = std::make_unique<balance::SplitTable>(std::move(balancer), table_->split_min_bytes());
}

void Orchestrator::abort() {
  if (braid_ != nullptr && braid_->engine) braid_->engine->abort();
}

Orchestrator::~Orchestrator() {
  if (braid_ != nullptr) {
    cudaSetDevice(device_);
    // Unsettled calls are dropped: settling meets the other ranks, which may be gone already.
    if (rank_ == 0 && table_ && !settings().tuning_cache.empty())
      balance::save_tuning_cache(*table_, settings().tuning_cache);
  }
  for (auto& [nccl_op, braid_op] : braid_ops_) braidRedOpDestroy(braid_op, braid_);
  if (nccl_stream_ != nullptr) cudaStreamSynchronize(nccl_stream_), cudaStreamDestroy(nccl_stream_);
  if (pcie_stream_ != nullptr) cudaStreamSynchronize(pcie_stream_), cudaStreamDestroy(pcie_stream_);
  if (scratch_ != nullptr) cudaFree(scratch_);
  for (const Timing& t : timings_) {
    if (t.fork) cudaEventDestroy(t.fork);
    if (t.nccl_end) cudaEventDestroy(t.nccl_end);
    if (t.pcie_end) cudaEventDestroy(t.pcie_end);
  }
  if (braid_ != nullptr) braidCommDestroy(braid_);
  if (trace_ != nullptr) std::fclose(trace_);
}

bool Orchestrator::wants(const SplitCall& call) const {
  // After a failure of braid's share, calls still come here and fail (never a silent fallback).
  if (!splittable(call.collective)) return false;
  if (!datatype_valid(static_cast<int>(call.type))) return false;
  if (call.op >= ncclNumOps && collective_reduces(call.collective) && premulsum_.count(call.op) == 0) return false;
  const size_t bytes = message_bytes(call, nranks_);
  if (rides_copy_engines(call) && bytes >= static_cast<size_t>(std::max<int64_t>(0, settings().nvlink_copy_min_bytes)))
    return true;
  return bytes >= table_->split_min_bytes();
}

// Operators made on the communicator (PreMulSum) have values from ncclNumOps on.
static RedOp builtin_or_premulsum(ncclRedOp_t op) {
  return op < ncclNumOps ? static_cast<RedOp>(op) : RedOp::PreMulSum;
}

bool Orchestrator::rides_copy_engines(const SplitCall& call) const {
  return peer_ && peer_->carries(call.collective, builtin_or_premulsum(call.op));
}

void Orchestrator::add_premulsum(ncclRedOp_t op, const PreMulSumSpec& spec) { premulsum_[op] = spec; }

void Orchestrator::remove_premulsum(ncclRedOp_t op) {
  premulsum_.erase(op);
  if (auto it = braid_ops_.find(op); it != braid_ops_.end()) {
    braidRedOpDestroy(it->second, braid_);
    braid_ops_.erase(it);
  }
}

Result Orchestrator::braid_op(ncclRedOp_t op, ncclRedOp_t* out) {
  if (op < ncclNumOps) {
    *out = op;  // built-in operators have the same values in both APIs
    return Result::Success;
  }
  if (auto it = braid_ops_.find(op); it != braid_ops_.end()) {
    *out = it->second;
    return Result::Success;
  }
  auto spec = premulsum_.find(op);
  if (spec == premulsum_.end())
    return fail(Result::InvalidArgument, "multipath: reduction op %d was not made on this communicator", op);
  void* scalar = spec->second.residence == ncclScalarDevice ? spec->second.device_pointer
                                                             : static_cast<void*>(spec->second.host_value);
  const ncclResult_t made =
      braidRedOpCreatePreMulSum(out, scalar, spec->second.type, spec->second.residence, braid_);
  if (made != ncclSuccess) return static_cast<Result>(made);
  braid_ops_[op] = *out;
  return Result::Success;
}

// NVLink's share: the first `elements` of every block, straight into the caller's buffers.
// AllReduce, Broadcast and Reduce have one block: NCCL's own call on its head. AllGather and
// ReduceScatter blocks are strided, which NCCL's own AllGather/ReduceScatter cannot address:
// point-to-point sends (AllGather) and one Reduce per block (ReduceScatter) land them in place
// with no extra device copy. BRAID_SPLIT_NCCL_SHARE=copy runs NCCL's own AllGather/ReduceScatter
// on a packed scratch buffer instead, with a device copy per block out (or in).
Result Orchestrator::nccl_share(const SplitCall& call, size_t elements) {
  const size_t esize = datatype_size(static_cast<DataType>(call.type));
  const size_t block = call.count * esize;
  const auto* send = static_cast<const unsigned char*>(call.send);
  auto* recv = static_cast<unsigned char*>(call.recv);
  cudaStream_t s = nccl_stream_;
  bool carried = false;
  BRAID_TRY(peer_share(call, elements, s, &carried));
  if (carried) return Result::Success;
  if (copy_based_ && (call.collective == Collective::AllGather || call.collective == Collective::ReduceScatter))
    return nccl_share_copied(call, elements);
  switch (call.collective) {
    case Collective::AllReduce:
    case Collective::Broadcast:
    case Collective::Reduce: {
      SplitCall head = call;
      head.count = elements;
      return nccl_whole(head, s);
    }
    case Collective::AllGather: {
      unsigned char* mine = recv + static_cast<size_t>(rank_) * block;
      if (mine != send) BRAID_TRY(cuda(cudaMemcpyAsync(mine, send, elements * esize, cudaMemcpyDeviceToDevice, s),
                                       "cudaMemcpyAsync (own block)"));
      BRAID_TRY(nccl_result(nccl_.group_start(), "ncclGroupStart"));
      Result r = Result::Success;
      for (int p = 0; p < nranks_ && r == Result::Success; ++p) {
        if (p == rank_) continue;
        r = nccl_result(nccl_.send(send, elements, call.type, p, comm_, s), "ncclSend");
        if (r == Result::Success)
          r = nccl_result(nccl_.recv(recv + static_cast<size_t>(p) * block, elements, call.type, p, comm_, s),
                          "ncclRecv");
      }
      const Result end = nccl_result(nccl_.group_end(), "ncclGroupEnd");
      return r != Result::Success ? r : end;
    }
    case Collective::ReduceScatter: {
      BRAID_TRY(nccl_result(nccl_.group_start(), "ncclGroupStart"));
      Result r = Result::Success;
      for (int root = 0; root < nranks_ && r == Result::Success; ++root)
        r = nccl_result(nccl_.reduce(send + static_cast<size_t>(root) * block, recv, elements, call.type, call.op,
                                     root, comm_, s),
                        "ncclReduce");
      const Result end = nccl_result(nccl_.group_end(), "ncclGroupEnd");
      return r != Result::Success ? r : end;
    }
    default:
      return fail(Result::InternalError, "multipath: %s is not split",
                  std::string(collective_name(call.collective)).c_str());
  }
}

Result Orchestrator::peer_share(const SplitCall& call, size_t elements, cudaStream_t stream, bool* carried) {
  *carried = false;
  last_share_copied_ = false;
  if (!rides_copy_engines(call)) return Result::Success;
  BRAID_TRY(peer_->run(call.collective, call.send, call.recv, call.count, static_cast<DataType>(call.type),
                       builtin_or_premulsum(call.op),
                       elements, stream, carried));
  last_share_copied_ = *carried;
  if (!*carried && !peer_refused_logged_) {
    peer_refused_logged_ = true;
    BRAID_INFO(Balance, "multipath: a rank's buffer of this call is null or cannot be shared through CUDA IPC; "
               "NCCL carries the NVLink share of such calls");
  }
  return Result::Success;
}

// The copy-based NCCL share of AllGather and ReduceScatter: the heads of the blocks (`elements`
// each) packed in scratch, NCCL's own collective on them, and a strided copy between scratch and
// the caller's blocks.
Result Orchestrator::nccl_share_copied(const SplitCall& call, size_t elements) {
  const size_t esize = datatype_size(static_cast<DataType>(call.type));
  const size_t head = elements * esize, block = call.count * esize;
  const size_t packed = head * static_cast<size_t>(nranks_);
  if (packed > scratch_bytes_) {
    // cudaFree and cudaMalloc wait for the device: no earlier share still uses the old buffer.
    if (scratch_ != nullptr) cudaFree(scratch_);
    scratch_ = nullptr;
    scratch_bytes_ = 0;
    BRAID_TRY(cuda(cudaMalloc(&scratch_, packed), "cudaMalloc (NCCL share scratch)"));
    scratch_bytes_ = packed;
  }
  cudaStream_t s = nccl_stream_;
  const auto n = static_cast<size_t>(nranks_);
  // One copy per block (a handful): a 2D copy's pitch is limited, a block may be gigabytes.
  auto* scratch = static_cast<unsigned char*>(scratch_);
  const auto* send = static_cast<const unsigned char*>(call.send);
  auto* recv = static_cast<unsigned char*>(call.recv);
  if (call.collective == Collective::AllGather) {
    BRAID_TRY(nccl_result(nccl_.all_gather(call.send, scratch_, elements, call.type, comm_, s), "ncclAllGather"));
    for (size_t r = 0; r < n; ++r)
      BRAID_TRY(cuda(cudaMemcpyAsync(recv + r * block, scratch + r * head, head, cudaMemcpyDeviceToDevice, s),
                     "cudaMemcpyAsync (a gathered head into its block)"));
    return Result::Success;
  }
  for (size_t r = 0; r < n; ++r)
    BRAID_TRY(cuda(cudaMemcpyAsync(scratch + r * head, send + r * block, head, cudaMemcpyDeviceToDevice, s),
                   "cudaMemcpyAsync (a block head into scratch)"));
  return nccl_result(nccl_.reduce_scatter(scratch_, call.recv, elements, call.type, call.op, comm_, s),
                     "ncclReduceScatter");
}

// The whole call on NCCL, on stream `s`.
Result Orchestrator::nccl_whole(const SplitCall& call, cudaStream_t s) {
  const size_t n = call.count;
  switch (call.collective) {
    case Collective::AllReduce:
      return nccl_result(nccl_.all_reduce(call.send, call.recv, n, call.type, call.op, comm_, s), "ncclAllReduce");
    case Collective::AllGather:
      return nccl_result(nccl_.all_gather(call.send, call.recv, n, call.type, comm_, s), "ncclAllGather");
    case Collective::ReduceScatter:
      return nccl_result(nccl_.reduce_scatter(call.send, call.recv, n, call.type, call.op, comm_, s),
                         "ncclReduceScatter");
    case Collective::Broadcast:
      return nccl_result(nccl_.bootstrap.broadcast(call.send, call.recv, n, call.type, call.root, comm_, s),
                         "ncclBroadcast");
    case Collective::Reduce:
      return nccl_result(nccl_.reduce(call.send, call.recv, n, call.type, call.op, call.root, comm_, s), "ncclReduce");
    default:
      return fail(Result::InternalError, "multipath: %s is not split",
                  std::string(collective_name(call.collective)).c_str());
  }
}

// PCIe's share: elements [begin, begin + elements) of every block, through braid's engine.
Result Orchestrator::pcie_share(const SplitCall& call, size_t begin, size_t elements) {
  api::Call c{call.collective, call.send, call.recv, call.count, call.type, call.op, call.root};
  if (collective_reduces(call.collective)) BRAID_TRY(braid_op(call.op, &c.op));
  const Result r = api::run_collective(braid_, c, pcie_stream_, engine::BlockRange{begin, elements});
  cudaSetDevice(device_);
  return r;
}

Result Orchestrator::run(const SplitCall& call, cudaStream_t stream) {
  if (failed_ != Result::Success)
    return fail(failed_, "multipath: braid's PCIe path failed earlier on this communicator: %s",
                 failed_text_.c_str());
  // The caller's current device is the caller's (one thread may drive several GPUs): restored.
  int caller_device = device_;
  cudaGetDevice(&caller_device);
  struct RestoreDevice {
    int device;
    ~RestoreDevice() { cudaSetDevice(device); }
  } restore{caller_device};
  BRAID_TRY(cuda(cudaSetDevice(device_), "cudaSetDevice"));

  // The split comes from the table before the previous call is settled (below), so NCCL's share
  // is queued before the host waits for anything.
  const DataType type = static_cast<DataType>(call.type);
  const size_t bytes = message_bytes(call, nranks_);
  const balance::Shares shares = table_->issue(call.collective, type, bytes);
  const size_t esize = datatype_size(type);
  const size_t align = std::max<size_t>(1, kSplitAlignBytes / esize);
  const std::vector<size_t> split = balance::split_elements(shares, call.count, align);
  const size_t nccl_elements = split[balance::kDedicatedPath];
  const size_t pcie_elements = call.count - nccl_elements;

  Pending p;
  p.record.call = ++calls_;
  p.record.what = call;
  p.record.bytes = bytes;
  p.record.nccl_elements = nccl_elements;
  p.record.pcie_elements = pcie_elements;
  p.used = shares;
  if (pcie_elements == 0) {
    // Nothing for PCIe: the NVLink path alone on the caller's stream, no fork and no events.
    bool carried = false;
    BRAID_TRY(peer_share(call, call.count, stream, &carried));
    if (!carried) BRAID_TRY(nccl_whole(call, stream));
    p.record.nvlink_copy = carried;
    BRAID_TRY(settle_pending());
    pending_.push_back(p);
    return Result::Success;
  }
  p.timed = true;
  p.timing = next_timing_;
  next_timing_ = (next_timing_ + 1) % kTimingSlots;
  const Timing& t = timings_[p.timing];

  BRAID_TRY(cuda(cudaEventRecord(t.fork, stream), "cudaEventRecord (fork)"));
  BRAID_TRY(cuda(cudaStreamWaitEvent(nccl_stream_, t.fork, 0), "cudaStreamWaitEvent"));
  BRAID_TRY(cuda(cudaStreamWaitEvent(pcie_stream_, t.fork, 0), "cudaStreamWaitEvent"));
  // NCCL first: its kernels are queued behind the previous call on the GPU while the host settles
  // that call and then drives the PCIe share.
  last_share_copied_ = false;
  if (nccl_elements > 0) BRAID_TRY(nccl_share(call, nccl_elements));
  p.record.nvlink_copy = last_share_copied_;
  BRAID_TRY(cuda(cudaEventRecord(t.nccl_end, nccl_stream_), "cudaEventRecord"));
  Result r = settle_pending();
  if (r == Result::Success) r = pcie_share(call, nccl_elements, pcie_elements);
  if (r != Result::Success) {
    if (failed_ == Result::Success) {
      failed_ = r;
      failed_text_ = last_error();
    }
    BRAID_WARN(Balance, "multipath: braid's share failed (%s); later split calls on this communicator fail too",
               failed_text_.c_str());
    // The caller's stream still waits for NCCL's share, so nothing it queues next races it.
    cudaStreamWaitEvent(stream, t.nccl_end, 0);
    return r;
  }
  BRAID_TRY(cuda(cudaEventRecord(t.pcie_end, pcie_stream_), "cudaEventRecord"));
  BRAID_TRY(cuda(cudaStreamWaitEvent(stream, t.nccl_end, 0), "cudaStreamWaitEvent (join)"));
  BRAID_TRY(cuda(cudaStreamWaitEvent(stream, t.pcie_end, 0), "cudaStreamWaitEvent (join)"));
  pending_.push_back(p);
  return Result::Success;
}

Result Orchestrator::settle_pending() {
  // BRAID_SPLIT_SETTLE_LAG = 2 keeps the previous call unsettled: its end events are then surely
  // reached and the host goes straight on to this call's PCIe share (docs/MULTIPATH.md).
  const size_t keep = settings().split_settle_lag >= 2 ? 1 : 0;
  while (pending_.size() > keep) BRAID_TRY(settle_one());
  return Result::Success;
}

// The previous split call is settled during this one, after this call's split was chosen and its
// NCCL share queued: the host then waits for the previous call's end events without leaving
// NVLink idle. (Settling first, before choosing, left a launch-latency gap between consecutive
// NCCL shares: run 5.) So a call's split reflects every call but the one just before it; the
// balancer learns from each call against the shares that call used (Balancer::observe_used).
// Every rank settles the same calls at the same point, so the exchanges pair up.
Result Orchestrator::settle_one() {
  Pending p = pending_.front();
  pending_.pop_front();
  const DataType type = static_cast<DataType>(p.record.what.type);
  std::vector<double> seconds(static_cast<size_t>(nranks_) * 2, 0.0);
  if (!p.timed) {
    // PCIe carried nothing: every balancer's rule then ignores the NCCL time; 1 s stands in.
    for (int q = 0; q < nranks_; ++q) seconds[2 * q] = 1.0;
  } else {
    const Timing& t = timings_[p.timing];
    float nccl_ms = 0, pcie_ms = 0;
    BRAID_TRY(cuda(cudaEventSynchronize(t.pcie_end), "cudaEventSynchronize"));
    BRAID_TRY(cuda(cudaEventSynchronize(t.nccl_end), "cudaEventSynchronize"));
    if (p.record.nccl_elements > 0)
      BRAID_TRY(cuda(cudaEventElapsedTime(&nccl_ms, t.fork, t.nccl_end), "cudaEventElapsedTime"));
    BRAID_TRY(cuda(cudaEventElapsedTime(&pcie_ms, t.fork, t.pcie_end), "cudaEventElapsedTime"));
    const uint64_t mine[2] = {static_cast<uint64_t>(std::max(0.f, nccl_ms) * 1e6),
                              static_cast<uint64_t>(std::max(0.f, pcie_ms) * 1e6)};
    std::vector<uint64_t> all;
    const Result exchanged = braid_->engine->exchange(mine, &all);
    if (exchanged != Result::Success) {
      failed_ = exchanged;
      failed_text_ = last_error();
      return exchanged;
    }
    for (size_t i = 0; i < all.size(); ++i) seconds[i] = static_cast<double>(all[i]) * 1e-9;
  }
  BRAID_TRY(table_->update_used(p.record.what.collective, type, p.record.bytes, p.used, seconds, nranks_));
  for (int q = 0; q < nranks_ && p.timed; ++q) {
    p.record.nccl_seconds = std::max(p.record.nccl_seconds, seconds[2 * q]);
    p.record.pcie_seconds = std::max(p.record.pcie_seconds, seconds[2 * q + 1]);
  }
  p.record.next_pcie_share = table_->shares_for(p.record.what.collective, type, p.record.bytes).fraction(1);
  BRAID_INFO(Balance, "split %s %s %s %zu B call %llu: nvlink (%s) %zu + pcie %zu elements, %.3f / %.3f ms, next pcie share %.4f",
             std::string(collective_name(p.record.what.collective)).c_str(),
             std::string(datatype_name(type)).c_str(), op_text(p.record.what.op).c_str(), p.record.bytes,
             static_cast<unsigned long long>(p.record.call), p.record.nvlink_copy ? "braid" : "nccl",
             p.record.nccl_elements, p.record.pcie_elements,
             p.record.nccl_seconds * 1e3, p.record.pcie_seconds * 1e3, p.record.next_pcie_share);
  trace(p.record);
  if (keep_history_) history_.push_back(p.record);
  return Result::Success;
}

void Orchestrator::trace(const SplitRecord& r) {
  if (trace_ == nullptr) return;
  std::fprintf(trace_,
               "{\"call\": %llu, \"collective\": \"%s\", \"dtype\": \"%s\", \"bytes\": %zu, \"count\": %zu, "
               "\"nccl_elements\": %zu, \"pcie_elements\": %zu, \"pcie_share\": %.6f, \"nccl_ms\": %.4f, "
               "\"pcie_ms\": %.4f, \"next_pcie_share\": %.6f, \"nvlink_path\": \"%s\"}\n",
               static_cast<unsigned long long>(r.call), std::string(collective_name(r.what.collective)).c_str(),
               std::string(datatype_name(static_cast<DataType>(r.what.type))).c_str(), r.bytes, r.what.count,
               r.nccl_elements, r.pcie_elements,
               r.what.count ? static_cast<double>(r.pcie_elements) / static_cast<double>(r.what.count) : 0.0,
               r.nccl_seconds * 1e3, r.pcie_seconds * 1e3, r.next_pcie_share, r.nvlink_copy ? "copy" : "nccl");
  std::fflush(trace_);
}

}  // namespace braid::multipath
