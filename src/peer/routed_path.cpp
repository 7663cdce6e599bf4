#include "peer/routed_path.h"

#include <algorithm>
#include <cstring>

#include "common/log.h"
#include "common/settings.h"
#include "common/sizes.h"
#include "cuda/device_scope.h"
#include "engine/control.h"
#include "engine/routed_exchange.h"
#include "peer/allocation_share.h"
#include "peer/peer_layout.h"
#include "peer/peer_path.h"
#include "route/grouped_exchange.h"
#include "topo/topology.h"

namespace braid::peer {

namespace {

static_assert(kRoutedForwarded < engine::kPathSignals);

// Words of one rank's record in a handle exchange: the buffer's pointer (peers in this process),
// its offset in the exported allocation, the allocation's record (allocation_record.h), and
// whether it could be exported.
constexpr int kPointerWord = 0, kOffsetWord = 1, kAllocationWord = 2;
constexpr int kUnshareableWord = kAllocationWord + kAllocationWords;
constexpr int kRecordWords = kUnshareableWord + 1;
static_assert(kRecordWords <= engine::kExchangeSlots);

constexpr size_t kMaxMappings = 64;
// Relayed ranges move in slices of this size unless BRAID_SLICE_BYTES says otherwise: large
// enough that a copy's fixed cost (microseconds) is small, small enough that the relay's second
// hop starts soon after the first.
constexpr size_t kDefaultSliceBytes = size_t{4} << 20;

// run_exchange's two queues as two streams of this path: copies are cudaMemcpyAsync (copy engines,
// peer to peer), waits and raises the CUDA backend's stream memory operations on the control
// segment's counters. The exchange only copies; the engine's other operations are not offered.
class ExchangeQueues final : public device::Backend {
 public:
  ExchangeQueues(cuda::CudaBackend* backend, const cudaStream_t (&streams)[2], cudaEvent_t fork,
                 const cudaEvent_t (&joins)[2], cudaStream_t user)
      : backend_(backend), streams_{streams[0], streams[1]}, fork_(fork), joins_{joins[0], joins[1]}, user_(user) {}

  int num_queues() const override { return 2; }
  Result copy(int queue, void* dst, const void* src, size_t bytes, device::Signal done) override {
    if (bytes > 0 && dst != src)
      BRAID_TRY(check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, streams_[queue]), "cudaMemcpyAsync (peer)"));
    return done.empty() ? Result::Success : backend_->raise_on_stream(streams_[queue], done);
  }
  Result wait(int queue, device::Signal until) override { return backend_->wait_on_stream(streams_[queue], until); }
  Result raise(int queue, device::Signal signal) override { return backend_->raise_on_stream(streams_[queue], signal); }
  Result begin_collective() override {
    BRAID_TRY(check(cudaEventRecord(fork_, user_), "cudaEventRecord (fork)"));
    for (cudaStream_t s : streams_) BRAID_TRY(check(cudaStreamWaitEvent(s, fork_, 0), "cudaStreamWaitEvent (fork)"));
    return Result::Success;
  }
  Result end_collective() override {
    for (int q = 0; q < 2; ++q) {
      BRAID_TRY(check(cudaEventRecord(joins_[q], streams_[q]), "cudaEventRecord (join)"));
      BRAID_TRY(check(cudaStreamWaitEvent(user_, joins_[q], 0), "cudaStreamWaitEvent (join)"));
    }
    return Result::Success;
  }
  Result status(std::string* message) const override { return backend_->status(message); }

  Result d2h(int, void*, const void*, size_t, device::Signal) override { return unsupported("d2h"); }
  Result h2d(int, void*, const void*, size_t, device::Signal) override { return unsupported("h2d"); }
  Result reduce(int, DataType, RedOp, void*, const void*, size_t, const reduce::OpScalar*, const reduce::OpScalar*,
                device::Signal) override {
    return unsupported("reduce");
  }
  Result scale(int, DataType, void*, const void*, size_t, const reduce::OpScalar&, device::Signal) override {
    return unsupported("scale");
  }
  Result divide(int, DataType, void*, size_t, uint64_t, device::Signal) override { return unsupported("divide"); }
  void* device_scratch(size_t) override { return nullptr; }
  Result register_host(void*, size_t) override { return unsupported("register_host"); }
  Result unregister_host(void*) override { return unsupported("unregister_host"); }
  void set_timeout(double) override {}
  void set_abort_flag(const std::atomic<uint64_t>*) override {}
  void abort() override { backend_->abort(); }

 private:
  static Result check(cudaError_t e, const char* what) {
    if (e == cudaSuccess) return Result::Success;
    return fail(Result::UnhandledCudaError, "routed exchange: %s: %s", what, cudaGetErrorString(e));
  }
  static Result unsupported(const char* what) {
    return fail(Result::InternalError, "routed exchange: its queues do not %s", what);
  }
  cuda::CudaBackend* backend_;
  cudaStream_t streams_[2];
  cudaEvent_t fork_;
  cudaEvent_t joins_[2];
  cudaStream_t user_;
};

// The topology exchanges are routed on: BRAID_ROUTE_TOPOLOGY, else the engine's (this machine's),
// cut to the communicator's ranks.
Result routing_topology(const topo::Topology& machine, int ranks, topo::Topology* out) {
  const std::string& named = settings().route_topology;
  if (named.empty()) return route::topology_for_ranks(machine, ranks, out);
  topo::Topology t;
  BRAID_TRY(topo::load_topology(named, &t));
  return route::topology_for_ranks(t, ranks, out);
}

}  // namespace

Result RoutedPath::cuda(cudaError_t e, const char* what) const {
  if (e == cudaSuccess) return Result::Success;
  return fail(Result::UnhandledCudaError, "routed exchange (GPU %d): %s: %s", device_, what, cudaGetErrorString(e));
}

Result RoutedPath::create(ncclComm_t comm, const nccl::NcclCalls& nccl, std::unique_ptr<RoutedPath>* out,
                          const engine::CommId* id) {
  out->reset();
  std::unique_ptr<RoutedPath> p(new RoutedPath());
  BRAID_TRY(id != nullptr ? api::init_from_nccl_with_id(&p->braid_, comm, nccl, id->bytes)
                          : api::init_from_nccl(&p->braid_, comm, nccl));
  p->rank_ = p->braid_->rank;
  p->nranks_ = p->braid_->nranks;
  p->device_ = p->braid_->device;
  const cuda::DeviceScope on_device(p->device_);
  BRAID_TRY(p->cuda(on_device.status(), "cudaSetDevice"));

  // Every rank makes its part, then all learn whether every rank could.
  Peers peers;
  Result made = find_peers(p->braid_, &peers);
  if (made == Result::Success && !peers.reachable)
    made = fail(Result::InvalidUsage, "routed exchange: GPU %d cannot reach every peer's by peer copies%s", p->device_,
                settings().peer_same_gpu ? "" : " (ranks on one GPU need BRAID_PEER_SAME_GPU=1)");
  topo::Topology topology;
  if (made == Result::Success) made = routing_topology(p->braid_->engine->topology(), p->nranks_, &topology);
  route::RouterOptions options;
  options.direct_threshold = double(byte_threshold(settings().route_min_bytes));
  if (made == Result::Success) made = p->router_.init(topology, options);
  for (cudaStream_t& s : p->streams_)
    if (made == Result::Success) made = p->cuda(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
  for (cudaEvent_t* e : {&p->fork_, &p->joins_[0], &p->joins_[1], &p->last_done_})
    if (made == Result::Success) made = p->cuda(cudaEventCreateWithFlags(e, cudaEventDisableTiming), "cudaEventCreate");
  const std::string why = made == Result::Success ? "" : last_error();
  const uint64_t flag[1] = {made == Result::Success ? 1u : 0u};
  std::vector<uint64_t> all;
  BRAID_TRY(p->braid_->engine->exchange(flag, &all));
  if (made != Result::Success) return fail(made, "%s", why.c_str());
  for (int q = 0; q < p->nranks_; ++q)
    if (all[q] == 0) return fail(Result::InvalidUsage, "routed exchange: rank %d could not set it up (its log says why)", q);
  p->same_process_ = peers.same_process;
  p->fd_passing_ = peers.fd_passing;
  p->scratch_known_.assign(p->nranks_, 0);
  p->peer_scratch_.assign(p->nranks_, nullptr);
  p->peer_recv_.assign(p->nranks_, nullptr);
  RoutedPath* self = p.get();
  p->opened_ = std::make_unique<MappingCache>(
      kMaxMappings,
      MappingCache::Hooks{[](const MappingCache::Key& key, unsigned char** base) { return open_exported(key, base); },
                          close_exported,
                          [self] { return self->cuda(cudaEventSynchronize(self->last_done_), "cudaEventSynchronize"); }});
  BRAID_INFO(Init,
             "routed exchange: rank %d/%d on GPU %d routes all-to-alls, gathers and scatters from %lld bytes per "
             "flow on %s (%d GPUs)",
             p->rank_, p->nranks_, p->device_, static_cast<long long>(settings().route_min_bytes),
             topology.name.c_str(), topology.gpu_count());
  *out = std::move(p);
  return Result::Success;
}

RoutedPath::~RoutedPath() {
  if (braid_ == nullptr) return;
  cudaSetDevice(device_);
  for (cudaStream_t s : streams_)
    if (s != nullptr) cudaStreamSynchronize(s), cudaStreamDestroy(s);
  for (cudaEvent_t e : {fork_, joins_[0], joins_[1], last_done_})
    if (e != nullptr) cudaEventDestroy(e);
  opened_.reset();  // the peers' mappings before this rank's scratch (theirs map it)
  if (scratch_ != nullptr) cudaFree(scratch_);
  braidCommDestroy(braid_);
}

Result RoutedPath::map_peer(int q, const uint64_t* words, unsigned char** out) {
  if (q == rank_ || same_process_[q]) {
    *out = reinterpret_cast<unsigned char*>(words[kPointerWord]);
    return Result::Success;
  }
  MappingCache::Key key;
  std::copy(words + kAllocationWord, words + kAllocationWord + kAllocationWords, key.begin());
  unsigned char* base = nullptr;
  BRAID_TRY(opened_->get(key, epoch_ + 1, &base));
  *out = base + words[kOffsetWord];
  return Result::Success;
}

Result RoutedPath::share_receive_buffers(const route::ExchangeLayout& layout, const void* send, void* recv,
                                         bool* all_shareable) {
  uint64_t mine[kRecordWords] = {};
  // A rank that receives nothing has nothing to share (its pointer may be anything). A null buffer
  // is bad input that NCCL reports; IPC exports whole allocations of device memory. Buffers that
  // overlap (in place) go to NCCL too, but for a rank's own block received where it is sent: a
  // peer would write this rank's block from it before this rank has sent what sits there.
  const bool receives = layout.recv_bytes(rank_) > 0;
  if (receives) mine[kPointerWord] = reinterpret_cast<uint64_t>(recv);
  if (!route::packed_buffers_usable(layout, rank_, send, recv) ||
      (receives &&
       !export_buffer(recv, layout.recv_bytes(rank_), fd_passing_, &mine[kAllocationWord], &mine[kOffsetWord])))
    mine[kUnshareableWord] = 1;
  std::vector<uint64_t> all;
  BRAID_TRY(braid_->engine->exchange(mine, &all));
  *all_shareable = true;
  for (int q = 0; q < nranks_; ++q) *all_shareable = *all_shareable && all[size_t(q) * kRecordWords + kUnshareableWord] == 0;
  if (!*all_shareable) return Result::Success;
  for (int q = 0; q < nranks_; ++q) {
    peer_recv_[size_t(q)] = nullptr;
    if (layout.recv_bytes(q) > 0) BRAID_TRY(map_peer(q, &all[size_t(q) * kRecordWords], &peer_recv_[size_t(q)]));
  }
  return Result::Success;
}

Result RoutedPath::share_flow_buffers(const route::RankFlows& flows, bool* all_shareable) {
  // One record per receive flow, in (source, call) order: the buffer as share_receive_buffers
  // shares one, then its source and bytes. A rank may have more records than one exchange holds, so
  // they go in rounds of kExchangeSlots words after a first round that tells every rank's count.
  constexpr int kSourceWord = kRecordWords, kBytesWord = kRecordWords + 1, kFlowWords = kRecordWords + 2;
  std::vector<uint64_t> mine;
  bool unshareable = false;
  for (int p = 0; p < nranks_; ++p)
    for (const route::FlowBuffer& f : flows.recvs[size_t(p)]) {
      uint64_t w[kFlowWords] = {};
      w[kPointerWord] = reinterpret_cast<uint64_t>(f.data);
      w[kSourceWord] = uint64_t(p);
      w[kBytesWord] = f.bytes;
      // As for an all-to-all: a receive buffer that overlaps one of this rank's sends would be
      // written by a peer before this rank has sent from it.
      const auto* r = static_cast<const unsigned char*>(f.data);
      bool overlap = false;
      for (const auto& to : flows.sends)
        for (const route::FlowBuffer& send : to) {
          const auto* b = static_cast<const unsigned char*>(send.data);
          overlap = overlap || (send.bytes > 0 && f.bytes > 0 && b < r + f.bytes && r < b + send.bytes);
        }
      if (f.bytes > 0 && (f.data == nullptr || overlap || !export_buffer(f.data, f.bytes, fd_passing_, &w[kAllocationWord], &w[kOffsetWord])))
        unshareable = true;
      mine.insert(mine.end(), w, w + kFlowWords);
    }
  const uint64_t head[2] = {mine.size() / kFlowWords, unshareable ? 1u : 0u};
  std::vector<uint64_t> heads;
  BRAID_TRY(braid_->engine->exchange(head, &heads));
  size_t most = 0;
  *all_shareable = true;
  for (int q = 0; q < nranks_; ++q) {
    most = std::max<size_t>(most, heads[2 * size_t(q)]);
    *all_shareable = *all_shareable && heads[2 * size_t(q) + 1] == 0;
  }
  if (!*all_shareable) return Result::Success;
  const size_t words = most * kFlowWords, rounds = (words + engine::kExchangeSlots - 1) / engine::kExchangeSlots;
  mine.resize(rounds * engine::kExchangeSlots, 0);
  std::vector<std::vector<uint64_t>> theirs(static_cast<size_t>(nranks_));  // every rank's records, in order
  for (size_t round = 0; round < rounds; ++round) {
    std::vector<uint64_t> all;
    BRAID_TRY(braid_->engine->exchange(std::span(mine).subspan(round * engine::kExchangeSlots, engine::kExchangeSlots), &all));
    for (int q = 0; q < nranks_; ++q)
      theirs[size_t(q)].insert(theirs[size_t(q)].end(), all.begin() + q * engine::kExchangeSlots,
                               all.begin() + (q + 1) * engine::kExchangeSlots);
  }
  peer_flows_.assign(size_t(nranks_), {});
  for (int q = 0; q < nranks_; ++q) {
    route::RankFlows& f = peer_flows_[size_t(q)];
    f.rank = q;
    f.ranks = nranks_;
    f.sends.assign(size_t(nranks_), {});
    f.recvs.assign(size_t(nranks_), {});
    if (q == rank_) f.sends = flows.sends;  // only a rank's own sends are read (by itself)
    for (size_t i = 0; i < heads[2 * size_t(q)]; ++i) {
      const uint64_t* w = &theirs[size_t(q)][i * kFlowWords];
      if (w[kSourceWord] >= uint64_t(nranks_))
        return fail(Result::InternalError, "routed exchange: rank %d shared a receive flow from rank %llu", q,
                    static_cast<unsigned long long>(w[kSourceWord]));
      unsigned char* at = nullptr;
      if (w[kBytesWord] > 0) BRAID_TRY(map_peer(q, w, &at));
      f.recvs[size_t(w[kSourceWord])].push_back({at, size_t(w[kBytesWord])});
    }
  }
  return Result::Success;
}

Result RoutedPath::ensure_scratch(const std::vector<size_t>& bytes) {
  bool grows = false;
  for (int q = 0; q < nranks_; ++q) grows = grows || bytes[size_t(q)] > scratch_known_[size_t(q)];
  if (!grows) return Result::Success;  // the same on every rank: the plan is
  const size_t want = bytes[size_t(rank_)];
  uint64_t mine[kRecordWords] = {};
  Result r = Result::Success;
  if (want > scratch_bytes_) {
    // Earlier exchanges may still relay through the old scratch.
    if (scratch_ != nullptr) r = cuda(cudaEventSynchronize(last_done_), "cudaEventSynchronize (scratch)");
    if (r == Result::Success && scratch_ != nullptr) cudaFree(scratch_), scratch_ = nullptr, scratch_bytes_ = 0;
    if (r == Result::Success) r = cuda(cudaMalloc(&scratch_, want), "cudaMalloc (relay scratch)");
    if (r == Result::Success) scratch_bytes_ = want;
  }
  mine[kPointerWord] = reinterpret_cast<uint64_t>(scratch_);
  if (r != Result::Success || (scratch_ != nullptr && !export_buffer(scratch_, scratch_bytes_, fd_passing_, &mine[kAllocationWord], &mine[kOffsetWord])))
    mine[kUnshareableWord] = 1;
  std::vector<uint64_t> all;
  BRAID_TRY(braid_->engine->exchange(mine, &all));
  for (int q = 0; q < nranks_; ++q)
    if (all[size_t(q) * kRecordWords + kUnshareableWord] != 0)
      return fail(Result::UnhandledCudaError, "routed exchange: rank %d has no relay scratch of %zu bytes to share", q,
                  bytes[size_t(q)]);
  for (int q = 0; q < nranks_; ++q) {
    peer_scratch_[size_t(q)] = nullptr;
    if (all[size_t(q) * kRecordWords + kPointerWord] != 0)
      BRAID_TRY(map_peer(q, &all[size_t(q) * kRecordWords], &peer_scratch_[size_t(q)]));
  }
  scratch_known_ = bytes;
  return Result::Success;
}

Result RoutedPath::record_failure(Result r) {
  if (r == Result::Success) return r;
  std::lock_guard lock(failure_mutex_);
  if (failed_.load() == 0) {
    failure_text_ = last_error();
    failed_.store(static_cast<int>(r));
  }
  return r;
}

void RoutedPath::abort() {
  if (braid_ == nullptr) return;
  // Peers' streams parked on this rank's counters go on; this rank's parked streams too.
  braid_->engine->release_path_signals(rank_);
  braid_->engine->abort();
}

Result RoutedPath::failure(std::string* text) {
  if (failed_.load() == 0 && braid_ != nullptr) {
    std::string message;
    if (braid_->engine->aborted()) {
      record_failure(fail(Result::RemoteError, "routed exchange: a rank aborted the exchanges of this communicator"));
    } else if (braid_->backend->status(&message) != Result::Success) {
      record_failure(fail(Result::InternalError, "routed exchange: %s", message.c_str()));
    } else if (in_flight_.load()) {
      const cudaError_t e = cudaEventQuery(last_done_);
      if (e == cudaSuccess) {
        in_flight_.store(false);
      } else if (e != cudaErrorNotReady) {
        record_failure(cuda(e, "the exchange's end"));
      } else {
        std::chrono::steady_clock::time_point queued;
        {
          std::lock_guard lock(failure_mutex_);
          queued = queued_at_;
        }
        const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - queued).count();
        if (waited > settings().timeout)
          record_failure(fail(Result::RemoteError,
                              "routed exchange: epoch %llu has not ended %.0f s after it was queued (a peer died or "
                              "stalled; BRAID_TIMEOUT)",
                              static_cast<unsigned long long>(epoch_), waited));
      }
    }
    if (failed_.load() != 0) abort();
  }
  const auto r = static_cast<Result>(failed_.load());
  if (r != Result::Success && text != nullptr) {
    std::lock_guard lock(failure_mutex_);
    *text = failure_text_;
  }
  return r;
}

Result RoutedPath::alltoall(const void* send, void* recv, size_t count, DataType type, cudaStream_t stream,
                            bool* routed) {
  return exchange(route::alltoall_layout(nranks_, count, datatype_size(type)), send, recv, stream, routed);
}

Result RoutedPath::exchange(const route::ExchangeLayout& layout, const void* send, void* recv, cudaStream_t stream,
                            bool* routed) {
  return run(
      layout, [&](bool* ok) { return share_receive_buffers(layout, send, recv, ok); },
      [&] {
        // Only the buffers the layout has a rank use: the others may be anything.
        std::vector<const void*> sends(size_t(nranks_), nullptr);
        if (layout.send_bytes(rank_) > 0) sends[size_t(rank_)] = send;
        const std::vector<void*> recvs(peer_recv_.begin(), peer_recv_.end());
        return engine::packed_buffers(layout, sends, recvs, {});
      },
      stream, routed);
}

Result RoutedPath::grouped(const route::ExchangeLayout& layout, const route::RankFlows& flows, cudaStream_t stream,
                           bool* routed) {
  *routed = false;
  if (flows.rank != rank_ || flows.ranks != nranks_)
    return fail(Result::InvalidArgument, "routed exchange: a group of rank %d of %d on rank %d of %d", flows.rank,
                flows.ranks, rank_, nranks_);
  return run(
      layout, [&](bool* ok) { return share_flow_buffers(flows, ok); },
      [&] { return engine::grouped_buffers(peer_flows_, {}); }, stream, routed);
}

Result RoutedPath::run(const route::ExchangeLayout& layout, const std::function<Result(bool*)>& share,
                       const std::function<engine::ExchangeBuffers()>& buffers, cudaStream_t stream, bool* routed) {
  *routed = false;
  std::string text;
  if (const Result f = failure(&text); f != Result::Success)
    return fail(f, "routed exchange: failed earlier on this communicator: %s", text.c_str());
  if (layout.ranks != nranks_)
    return fail(Result::InvalidArgument, "routed exchange: a layout of %d ranks on %d", layout.ranks, nranks_);
  if (epoch_ + 1 >= (uint64_t{1} << 32)) {
    declined_ = "this communicator's routed exchanges have spent their counters";
    return Result::Success;  // NCCL from here on
  }
  const cuda::DeviceScope on_device(device_);
  BRAID_TRY(cuda(on_device.status(), "cudaSetDevice"));

  // The same routing and plan on every rank: same layout, same router history.
  route::ExchangePlan plan;
  BRAID_TRY(route::route_exchange(router_, layout, {}, &routing_, &plan));
  const size_t relayed = route::relayed_ranges(plan);
  if (relayed == 0 && settings().route_exchanges < 2) {
    declined_ = "the routing keeps every flow direct, which BRAID_ROUTE_EXCHANGES=1 leaves to NCCL (2 runs it too)";
    return Result::Success;
  }

  bool shareable = false;
  BRAID_TRY(share(&shareable));
  if (!shareable) {
    declined_ = "a rank's buffers are in place, overlap, or cannot be shared (CUDA IPC, or a cuMem allocation's fd)";
    return Result::Success;
  }
  *routed = true;  // from here every rank queues the exchange
  BRAID_TRY(queue_exchange(plan, buffers(), stream));
  size_t flows = 0;
  for (const size_t c : layout.counts) flows += c > 0 ? 1 : 0;
  BRAID_INFO(Coll, "routed exchange: %zu flows, %zu bytes, %zu relayed ranges (epoch %llu)", flows,
             layout.send_bytes(rank_), relayed, static_cast<unsigned long long>(epoch_));
  return Result::Success;
}

Result RoutedPath::queue_exchange(const route::ExchangePlan& plan, engine::ExchangeBuffers buffers, cudaStream_t stream) {
  // A failure leaves peers waiting, so it aborts them.
  Result r = ensure_scratch(plan.scratch_bytes);
  const uint64_t epoch = epoch_ + 1;
  if (r == Result::Success) {
    buffers.scratch.assign(peer_scratch_.begin(), peer_scratch_.end());  // as ensure_scratch left them
    engine::ExchangeSignals signals;
    for (int q = 0; q < nranks_; ++q) {
      signals.ready.push_back(braid_->engine->path_signal(q, kRoutedReady));
      signals.sent.push_back(braid_->engine->path_signal(q, kRoutedSent));
      signals.forwarded.push_back(braid_->engine->path_signal(q, kRoutedForwarded));
    }
    ExchangeQueues queues(braid_->backend.get(), streams_, fork_, joins_, stream);
    const size_t slice = settings().slice_bytes > 0 ? static_cast<size_t>(settings().slice_bytes) : kDefaultSliceBytes;
    // Exchanges follow each other whatever streams they come on: the previous one's end (both
    // queues, every landing) before this one raises `ready` and reuses the scratch.
    for (cudaStream_t q : streams_)
      if (r == Result::Success) r = cuda(cudaStreamWaitEvent(q, last_done_, 0), "cudaStreamWaitEvent (previous exchange)");
    if (r == Result::Success) r = queues.begin_collective();
    if (r == Result::Success)
      r = engine::run_exchange(plan, rank_, buffers, signals, epoch, &queues, slice, settings().timeout,
                               engine::Completion::QueuesWait);
    if (r == Result::Success) r = queues.end_collective();
    if (r == Result::Success) r = cuda(cudaEventRecord(last_done_, stream), "cudaEventRecord (exchange done)");
  }
  epoch_ = epoch;
  if (r != Result::Success) {
    const std::string why = last_error();
    record_failure(r);
    abort();
    return fail(r, "%s (the exchanges of this communicator are aborted)", why.c_str());
  }
  {
    std::lock_guard lock(failure_mutex_);
    queued_at_ = std::chrono::steady_clock::now();
  }
  in_flight_.store(true);
  return Result::Success;
}

}  // namespace braid::peer
