#include "peer/peer_path.h"

#include <cuda.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "common/fd_broker.h"
#include "common/log.h"
#include "common/settings.h"
#include "cuda/peer_reduce.h"
#include "engine/control.h"
#include "peer/allocation_share.h"
#include "peer/cumem_share.h"

namespace braid::peer {

namespace {

// Words of one rank's buffer record in the per-call exchange: for the send and the receive
// buffer, the pointer (for peers in this process), its offset in the exported allocation and the
// allocation's record (for the others: allocation_record.h); and whether they could be exported.
struct BufferWords {
  int pointer, offset, allocation;
};
constexpr BufferWords kSendWords{0, 1, 2};
constexpr BufferWords kRecvWords{2 + kAllocationWords, 3 + kAllocationWords, 4 + kAllocationWords};
// kPushes: this rank asks to push an AllGather's blocks and published its receive buffer for it.
constexpr int kUnshareable = kRecvWords.allocation + kAllocationWords, kPushes = kUnshareable + 1,
              kBufferWords = kPushes + 1;
static_assert(kSendWords.allocation + kAllocationWords <= kRecvWords.pointer);
static_assert(kBufferWords <= engine::kExchangeSlots);
static_assert(kPeerReadDone < engine::kPathSignals);

// Whether cuMem allocations can pass between the processes of `comm` (Peers::fd_passing): each
// rank with a peer in another process starts this process's fd broker and pings every such
// peer's. A peer in another network or pid namespace fails the ping, and cuMem buffers then go
// to NCCL as before, on every rank alike. Collective.
Result agree_on_fd_passing(braidComm* comm, const std::vector<bool>& same_process, const std::vector<uint64_t>& pids,
                           bool* out) {
  const int n = comm->nranks;
  bool any_other_process = false;
  for (int q = 0; q < n; ++q) any_other_process = any_other_process || !same_process[q];
  FdBroker* broker = nullptr;
  const bool serving = any_other_process && process_fd_broker(&broker) == Result::Success;
  const uint64_t nonce[1] = {serving ? broker->address().nonce : 0};
  std::vector<uint64_t> nonces;
  BRAID_TRY(comm->engine->exchange(nonce, &nonces));
  bool reached = !any_other_process || serving;
  for (int q = 0; q < n && reached; ++q)
    if (!same_process[q]) reached = ping_fd_broker({pids[q], nonces[q]}, fd_broker_wait_ms()) == Result::Success;
  const uint64_t flag[1] = {reached ? 1u : 0u};
  std::vector<uint64_t> flags;
  BRAID_TRY(comm->engine->exchange(flag, &flags));
  *out = std::all_of(flags.begin(), flags.end(), [](uint64_t f) { return f != 0; });
  if (any_other_process && !*out)
    BRAID_INFO(Init, "rank %d: cuMem buffers cannot pass between this communicator's processes (a rank's fd broker "
               "was not reached); their NVLink shares go to NCCL", comm->rank);
  return Result::Success;
}

}  // namespace

Result PeerPath::cuda(cudaError_t e, const char* what) const {
  if (e == cudaSuccess) return Result::Success;
  return fail(Result::UnhandledCudaError, "NVLink copy-engine path (GPU %d): %s: %s", device_, what,
              cudaGetErrorString(e));
}

Result PeerPath::create(braidComm* comm, std::unique_ptr<PeerPath>* out) {
  out->reset();
  std::unique_ptr<PeerPath> p(new PeerPath());
  p->comm_ = comm;
  p->rank_ = comm->rank;
  p->nranks_ = comm->nranks;
  p->device_ = comm->device;
  BRAID_TRY(p->cuda(cudaSetDevice(p->device_), "cudaSetDevice"));

  Peers peers;
  BRAID_TRY(find_peers(comm, &peers));
  p->same_process_ = peers.same_process;
  p->any_ipc_ = peers.any_ipc;
  p->fd_passing_ = peers.fd_passing;
  const uint64_t reachable = peers.reachable ? 1 : 0;
  const std::vector<int>& peer_device = peers.device;
  std::vector<uint64_t> all;
  // Every rank makes its part, then all learn whether every rank could (so none waits for a path
  // another rank does not have).
  Result made = reachable ? Result::Success
                          : fail(Result::InvalidUsage, "NVLink copy-engine path: GPU %d cannot access every peer's",
                                 p->device_);
  if (made == Result::Success) made = p->make_resources(peer_device);
  const uint64_t flag[1] = {made == Result::Success ? 1u : 0u};
  BRAID_TRY(comm->engine->exchange(flag, &all));
  BRAID_TRY(made);
  for (int q = 0; q < p->nranks_; ++q)
    if (all[q] == 0)
      return fail(Result::InvalidUsage, "NVLink copy-engine path: rank %d could not set it up (its log says why)", q);
  p->shared_.resize(p->nranks_);
  PeerPath* self = p.get();
  p->opened_ = std::make_unique<MappingCache>(
      kMaxMappings,
      MappingCache::Hooks{
          [self](const MappingCache::Key& key, unsigned char** base) { return self->open_mapping(key, base); },
          close_exported,
          [self] { return self->cuda(cudaEventSynchronize(self->last_done_), "cudaEventSynchronize"); },
          [pins = p->pins_](const MappingCache::Key& key) { return pins->pinned(key); }});
  BRAID_INFO(Init, "rank %d/%d on GPU %d: NVLink copy-engine path to every peer (%s)", p->rank_, p->nranks_,
             p->device_,
             !p->any_ipc_ ? "one process" : p->fd_passing_ ? "CUDA IPC, cuMem by fd" : "CUDA IPC; cuMem buffers go to NCCL");
  *out = std::move(p);
  return Result::Success;
}

Result find_peers(braidComm* comm, Peers* out) {
  // Which GPU each rank drives, by PCI address (device numbers differ between processes), and
  // in which process.
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, comm->device) != cudaSuccess)
    return fail(Result::UnhandledCudaError, "peer copies: cudaGetDeviceProperties failed on GPU %d", comm->device);
  const uint64_t mine[4] = {static_cast<uint64_t>(prop.pciDomainID), static_cast<uint64_t>(prop.pciBusID),
                            static_cast<uint64_t>(prop.pciDeviceID), static_cast<uint64_t>(getpid())};
  std::vector<uint64_t> all;
  BRAID_TRY(comm->engine->exchange(mine, &all));
  const int n = comm->nranks;
  out->device.assign(n, -1);
  out->same_process.assign(n, false);
  out->any_ipc = false;
  out->reachable = true;
  for (int q = 0; q < n; ++q) {
    out->same_process[q] = all[4 * q + 3] == static_cast<uint64_t>(getpid());
    if (q == comm->rank) continue;
    out->any_ipc |= !out->same_process[q];
    char bus[32];
    std::snprintf(bus, sizeof bus, "%04x:%02x:%02x.0", static_cast<unsigned>(all[4 * q]),
                  static_cast<unsigned>(all[4 * q + 1]), static_cast<unsigned>(all[4 * q + 2]));
    int dev = -1, can = 0;
    if (cudaDeviceGetByPCIBusId(&dev, bus) != cudaSuccess) {
      cudaGetLastError();
      out->reachable = false;
      continue;
    }
    const bool same_gpu_ipc = dev == comm->device && !out->same_process[q] && settings().peer_same_gpu;
    if (!same_gpu_ipc && (dev == comm->device || cudaDeviceCanAccessPeer(&can, comm->device, dev) != cudaSuccess || can == 0)) {
      cudaGetLastError();
      out->reachable = false;
      continue;
    }
    out->device[q] = dev;
  }
  std::vector<uint64_t> pids(static_cast<size_t>(n));
  for (int q = 0; q < n; ++q) pids[q] = all[4 * q + 3];
  return agree_on_fd_passing(comm, out->same_process, pids, &out->fd_passing);
}

Result PeerPath::make_resources(const std::vector<int>& peer_device) {
  for (int q = 0; q < nranks_; ++q) {
    if (q == rank_ || !same_process_[q]) continue;
    const cudaError_t e = cudaDeviceEnablePeerAccess(peer_device[q], 0);
    if (e == cudaErrorPeerAccessAlreadyEnabled) cudaGetLastError();
    else BRAID_TRY(cuda(e, "cudaDeviceEnablePeerAccess"));
  }
  BRAID_TRY(cuda(cuda::load_peer_reduce_kernels(), "loading braid's NVLink reduction kernels"));
  BRAID_TRY(cuda(cudaStreamCreateWithFlags(&copy_in_, cudaStreamNonBlocking), "cudaStreamCreate"));
  BRAID_TRY(cuda(cudaStreamCreateWithFlags(&capture_, cudaStreamNonBlocking), "cudaStreamCreate"));
  body_graphs_ = settings().nvlink_body_graphs;
  for (cudaEvent_t* e : {&fork_, &graph_fork_})
    BRAID_TRY(cuda(cudaEventCreateWithFlags(e, cudaEventDisableTiming), "cudaEventCreate"));
  BRAID_TRY(cuda(cudaEventCreateWithFlags(&last_done_, cudaEventDisableTiming), "cudaEventCreate"));
  for (int k = 0; k < 2; ++k) {
    for (int i = 0; i < std::max(1, nranks_ - 1); ++i) {
      cudaStream_t s = nullptr;
      BRAID_TRY(cuda(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate"));
      pulls_[k].push_back(s);
      cudaEvent_t e = nullptr;
      BRAID_TRY(cuda(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate"));
      pull_joins_[k].push_back(e);
    }
  }
  for (int i = 0; i < 2; ++i) {
    BRAID_TRY(cuda(cudaEventCreateWithFlags(&pulled_[i], cudaEventDisableTiming), "cudaEventCreate"));
    BRAID_TRY(cuda(cudaEventCreateWithFlags(&reduced_[i], cudaEventDisableTiming), "cudaEventCreate"));
  }
  return Result::Success;
}

PeerPath::~PeerPath() {
  cudaSetDevice(device_);
  if (copy_in_ != nullptr) cudaStreamSynchronize(copy_in_), cudaStreamDestroy(copy_in_);
  for (cudaEvent_t e : {fork_, graph_fork_})
    if (e != nullptr) cudaEventDestroy(e);
  if (last_done_ != nullptr) cudaEventSynchronize(last_done_), cudaEventDestroy(last_done_);
  for (int k = 0; k < 2; ++k) {
    for (cudaStream_t s : pulls_[k]) cudaStreamSynchronize(s), cudaStreamDestroy(s);
    for (cudaEvent_t e : pull_joins_[k]) cudaEventDestroy(e);
  }
  for (int i = 0; i < 2; ++i) {
    if (pulled_[i] != nullptr) cudaEventDestroy(pulled_[i]);
    if (reduced_[i] != nullptr) cudaEventDestroy(reduced_[i]);
  }
  if (bodies_.builds() > 0 || queued_alone_ > 0)
    BRAID_INFO(Init, "NVLink copy-engine path (GPU %d): %llu calls launched from %llu graphs of its own, %llu queued "
               "one operation at a time; %llu AllGathers pushed", device_,
               static_cast<unsigned long long>(bodies_.launches() + bodies_.builds()),
               static_cast<unsigned long long>(bodies_.builds()), static_cast<unsigned long long>(queued_alone_),
               static_cast<unsigned long long>(gathers_pushed_));
  // A graph in flight is freed when it completes.
  for (void* g : bodies_.take_all()) cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(g));
  if (capture_ != nullptr) cudaStreamDestroy(capture_);
  if (scratch_ != nullptr) cudaFree(scratch_);
  opened_.reset();
}

Result PeerPath::find_mapping(const uint64_t* words, uint64_t offset, unsigned char** out) {
  MappingCache::Key key;
  std::copy(words, words + kAllocationWords, key.begin());
  unsigned char* base = nullptr;
  std::lock_guard lock(mapping_mutex_);
  call_keys_.push_back(key);
  // Opened here, on the calling thread, where a peer brings a new allocation: it may wait for
  // this GPU's queued work, which never waits for this thread (braid's progress threads queue no
  // GPU work, and every peer queued its earlier calls before it met this one).
  BRAID_TRY(opened_->get(key, seq_ + 1, &base));  // for the call about to be queued
  *out = base + offset;
  return Result::Success;
}

Result PeerPath::open_mapping(const MappingCache::Key& key, unsigned char** base) {
  const Result r = open_exported(key, base);
  // Only the context: whether this is a failure (a WARN) is the mapping cache's to say, which
  // first closes what may cover the allocation and tries again.
  if (r != Result::Success) return fail_softly(r, "NVLink copy-engine path (GPU %d): %s", device_, last_error());
  return Result::Success;
}

void PeerPath::publish(Collective c, const void* send, const void* recv, size_t count, DataType type,
                       size_t elements, Publication* out) const {
  out->assign(kBufferWords, 0);
  uint64_t* mine = out->data();
  // A null buffer is bad input: NCCL, which then moves the share on every rank, reports it as it
  // does without braid.
  if (send == nullptr || recv == nullptr) mine[kUnshareable] = 1;
  const size_t bytes = elements * datatype_size(type);
  auto publish_one = [&](const void* p, size_t size, BufferWords w) {
    mine[w.pointer] = reinterpret_cast<uint64_t>(p);
    if (!any_ipc_ || mine[kUnshareable] != 0) return true;
    return export_buffer(p, size, fd_passing_, &mine[w.allocation], &mine[w.offset]);
  };
  if (!publish_one(send, bytes, kSendWords)) mine[kUnshareable] = 1;
  // Only AllReduce and a pushed AllGather write the peers' outputs: only they map their receive
  // buffers. A receive buffer that cannot be exported leaves an AllGather to pulls.
  if (c == Collective::AllReduce && !publish_one(recv, bytes, kRecvWords)) mine[kUnshareable] = 1;
  if (c == Collective::AllGather && settings().nvlink_gather != "pull" && mine[kUnshareable] == 0)
    mine[kPushes] = publish_one(recv, (count * static_cast<size_t>(nranks_ - 1) + elements) * datatype_size(type),
                                kRecvWords) ? 1 : 0;
}

Result PeerPath::share_buffers(const Publication& mine, Collective c, bool* all_shareable) {
  if (mine.size() != static_cast<size_t>(kBufferWords))
    return fail(Result::InternalError, "NVLink copy-engine path: a publication of %zu words", mine.size());
  // The meeting of its own (Meeting::Path): braid's progress thread meets on the engine's at the
  // same time for the PCIe share and its timings, and the two must never pair up.
  std::vector<uint64_t> all;
  BRAID_TRY(comm_->engine->exchange(engine::Communicator::Meeting::Path, mine, &all));
  *all_shareable = true;
  {
    std::lock_guard lock(mapping_mutex_);
    call_keys_.clear();
  }
  gather_push_ = c == Collective::AllGather;
  for (int q = 0; q < nranks_; ++q) {
    *all_shareable = *all_shareable && all[q * kBufferWords + kUnshareable] == 0;
    gather_push_ = gather_push_ && all[q * kBufferWords + kPushes] != 0;
  }
  // How this rank issues its pushes is its own choice: the meetings are the same either way.
  gather_batch_ = gather_push_ && settings().nvlink_gather == "push-batch";
  if (!*all_shareable) return Result::Success;
  const bool with_recv = c == Collective::AllReduce || gather_push_;
  auto map = [&](int q, const uint64_t* theirs, BufferWords w, unsigned char** out) -> Result {
    if (q == rank_ || same_process_[q]) {
      *out = reinterpret_cast<unsigned char*>(theirs[w.pointer]);
      return Result::Success;
    }
    return find_mapping(&theirs[w.allocation], theirs[w.offset], out);
  };
  for (int q = 0; q < nranks_; ++q) {
    const uint64_t* theirs = &all[static_cast<size_t>(q) * kBufferWords];
    unsigned char* p = nullptr;
    BRAID_TRY(map(q, theirs, kSendWords, &p));
    shared_[q].send = p;
    shared_[q].recv = nullptr;
    if (with_recv) BRAID_TRY(map(q, theirs, kRecvWords, &shared_[q].recv));
  }
  return Result::Success;
}

Result PeerPath::run(Collective c, const void* send, void* recv, size_t count, DataType type, RedOp op,
                     size_t elements, const Publication& mine, cudaStream_t stream, Outcome* outcome, bool captured,
                     const std::function<void()>& on_met) {
  *outcome = Outcome::Unshareable;
  if (!carries(c, op))
    return fail(Result::InternalError, "NVLink copy-engine path: %s is not carried",
                std::string(collective_name(c)).c_str());
  BRAID_TRY(cuda(cudaSetDevice(device_), "cudaSetDevice"));
  // From the meeting on, peers' streams may wait for this rank's signals: a failure releases them
  // (below).
  bool shareable = false;
  Result r = share_buffers(mine, c, &shareable);
  if (r == Result::Success && !shareable) return Result::Success;
  // AllReduce's pulled pieces need scratch of this size (the same on every rank).
  const size_t esize = datatype_size(type);
  if (r == Result::Success && c == Collective::AllReduce && !captured && pulls(elements, esize))
    r = ensure_scratch(pull_scratch_bytes(esize));
  if (on_met) on_met();
  *outcome = Outcome::Carried;
  const CallSync sync = sync_for(captured);
  // Calls follow each other whatever streams they come on (as NCCL's on one communicator do), so
  // last_done_ stands for every call queued so far. A captured call follows what its graph's
  // launch follows (a capture cannot wait for work outside it).
  if (r == Result::Success)
    r = captured ? pin_for_graph(stream)
                 : cuda(cudaStreamWaitEvent(stream, last_done_, 0), "cudaStreamWaitEvent (previous call)");
  const Body queue = [&](cudaStream_t s) {
    return c == Collective::AllGather ? enqueue_all_gather(send, recv, count, type, elements, s, sync)
                                      : enqueue_all_reduce(send, recv, type, op, elements, s, sync);
  };
  // Outside the caller's graphs the call's operations (its meetings included) come from a graph of
  // braid's own where the same call came before: everything they read is in the key.
  // A batch of copies cannot be captured: such calls are queued as they are.
  if (r == Result::Success && gather_push_) ++gathers_pushed_;
  if (r == Result::Success && (captured || gather_batch_)) {
    if (gather_batch_ && !captured) ++queued_alone_;
    r = queue(stream);
  }
  if (r == Result::Success && !captured && !gather_batch_) {
    BodyGraphCache::Key key{static_cast<uint64_t>(c), reinterpret_cast<uint64_t>(send), reinterpret_cast<uint64_t>(recv),
                            count, static_cast<uint64_t>(type), static_cast<uint64_t>(op), elements, call_bit(sync.seq),
                            reinterpret_cast<uint64_t>(scratch_), pull_piece(esize), gather_push_ ? 1u : 0u};
    for (int q = 0; q < nranks_; ++q) {
      key.push_back(reinterpret_cast<uint64_t>(shared_[q].send));
      key.push_back(reinterpret_cast<uint64_t>(shared_[q].recv));
    }
    r = queue_body(key, stream, queue);
  }
  // A replay must leave every rank's flag where it found it.
  if (r == Result::Success && captured) r = graph_barrier(stream, kGraphRearmed);
  if (r == Result::Success && !captured) r = cuda(cudaEventRecord(last_done_, stream), "cudaEventRecord (call done)");
  if (r != Result::Success) {
    // Peers' streams may already wait for this rank's signals: release them and abort the
    // communicator, so that every rank's next call fails instead of hanging.
    const std::string why = last_error();
    comm_->engine->release_path_signals(rank_);
    comm_->engine->abort();
    return fail(r, "%s (the communicator is aborted)", why.c_str());
  }
  return Result::Success;
}

PeerPath::CallSync PeerPath::sync_for(bool captured) {
  CallSync sync;
  sync.captured = captured;
  if (captured) {
    sync.fork = graph_fork_;
    sync.pulls = &pulls_[1], sync.pull_joins = &pull_joins_[1];
  } else {
    sync.seq = ++seq_;
    sync.fork = fork_;
    sync.pulls = &pulls_[0], sync.pull_joins = &pull_joins_[0];
  }
  return sync;
}

// The signal each meeting point uses outside graphs (captured calls meet on kPeerGraphPhase).
static PeerSignal call_signal(int step) { return step == kGraphInputsReady ? kPeerReady : kPeerReadDone; }

Result PeerPath::graph_barrier(cudaStream_t stream, int step) {
  BRAID_TRY(comm_->backend->raise_on_stream(
      stream, {comm_->engine->path_signal(rank_, kPeerGraphPhase), kGraphBarriers[step].state}));
  for (int q = 0; q < nranks_; ++q)
    if (q != rank_)
      BRAID_TRY(comm_->backend->wait_for_bits_on_stream(stream, comm_->engine->path_signal(q, kPeerGraphPhase),
                                                        kGraphBarriers[step].pass_mask));
  return Result::Success;
}

Result PeerPath::meet(cudaStream_t stream, const CallSync& sync, int step) {
  if (sync.captured) return graph_barrier(stream, step);
  // One driver call for the raise and every wait: the calling thread makes it for every call.
  const uint64_t bit = call_bit(sync.seq);
  std::vector<device::Signal> waits;
  waits.reserve(static_cast<size_t>(nranks_));
  for (int q = 0; q < nranks_; ++q)
    if (q != rank_) waits.push_back({comm_->engine->path_signal(q, call_signal(step)), bit});
  return comm_->backend->raise_and_wait_on_stream(stream, {comm_->engine->path_signal(rank_, call_signal(step)), bit},
                                                  waits, /*any_bit=*/true);
}

namespace {
// What a captured graph holds of the peers' mappings: let go of when CUDA destroys the graph (on
// a CUDA thread, which may call no CUDA function).
struct GraphPins {
  std::shared_ptr<MappingPins> pins;
  std::vector<MappingCache::Key> keys;
};
void CUDART_CB release_graph_pins(void* p) {
  auto* held = static_cast<GraphPins*>(p);
  held->pins->unpin(held->keys);
  delete held;
}
}  // namespace

Result PeerPath::pin_for_graph(cudaStream_t stream) {
  std::vector<MappingCache::Key> keys;
  {
    std::lock_guard lock(mapping_mutex_);
    keys = call_keys_;
  }
  if (keys.empty()) return Result::Success;
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  cudaGraph_t graph = nullptr;
  BRAID_TRY(cuda(cudaStreamGetCaptureInfo(stream, &status, nullptr, &graph, nullptr, nullptr, nullptr),
                 "cudaStreamGetCaptureInfo"));
  if (status != cudaStreamCaptureStatusActive || graph == nullptr)
    return fail(Result::InvalidUsage, "NVLink copy-engine path: a captured call's stream is not capturing");
  pins_->pin(keys);
  auto* held = new GraphPins{pins_, std::move(keys)};
  cudaUserObject_t object = nullptr;
  if (const cudaError_t e = cudaUserObjectCreate(&object, held, release_graph_pins, 1, cudaUserObjectNoDestructorSync);
      e != cudaSuccess) {
    release_graph_pins(held);
    return cuda(e, "cudaUserObjectCreate");
  }
  return cuda(cudaGraphRetainUserObject(graph, object, 1, cudaGraphUserObjectMove), "cudaGraphRetainUserObject");
}

Result PeerPath::queue_body(const BodyGraphCache::Key& key, cudaStream_t stream, const Body& body) {
  const auto alone = [&] {
    ++queued_alone_;
    return body(stream);
  };
  if (!body_graphs_) return alone();
  if (void* graph = bodies_.find(key))
    return cuda(cudaGraphLaunch(static_cast<cudaGraphExec_t>(graph), stream), "cudaGraphLaunch (a call's body)");
  if (!bodies_.seen_before(key)) return alone();
  cudaGraphExec_t exec = nullptr;
  if (capture_body(body, &exec) != Result::Success) {
    // Queued as it is from now on: a body that cannot be captured is no failure of the call.
    body_graphs_ = false;
    BRAID_INFO(Coll, "NVLink copy-engine path (GPU %d): calls' bodies are queued one operation at a time: %s", device_,
               last_error());
    return alone();
  }
  if (void* old = bodies_.add(key, exec)) cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(old));
  return cuda(cudaGraphLaunch(exec, stream), "cudaGraphLaunch (a call's body)");
}

Result PeerPath::capture_body(const Body& body, cudaGraphExec_t* out) {
  *out = nullptr;
  BRAID_TRY(cuda(cudaStreamBeginCapture(capture_, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture"));
  const Result queued = body(capture_);
  cudaGraph_t graph = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(capture_, &graph);
  Result r = queued;
  if (r == Result::Success) r = cuda(ended, "cudaStreamEndCapture");
  if (r == Result::Success) r = cuda(cudaGraphInstantiate(out, graph, 0), "cudaGraphInstantiate");
  if (graph != nullptr) cudaGraphDestroy(graph);
  if (r != Result::Success) cudaGetLastError();
  return r;
}

Result PeerPath::enqueue_all_gather(const void* send, void* recv, size_t count, DataType type, size_t elements,
                                    cudaStream_t stream, const CallSync& sync) {
  // Before any copy: every peer's input is ready and its output free to be written (its stream
  // got here).
  BRAID_TRY(meet(stream, sync, kGraphInputsReady));

  const size_t esize = datatype_size(type);
  const size_t block = count * esize, head = elements * esize;
  const auto* in = static_cast<const unsigned char*>(send);
  auto* out = static_cast<unsigned char*>(recv);
  unsigned char* own = out + static_cast<size_t>(rank_) * block;
  // Every peer's block over NVLink, in rank order from the next one (so that no rank is everyone's
  // first): pulled from its input into this rank's output, or this rank's block pushed into its
  // output (BRAID_NVLINK_GATHER).
  std::vector<PeerCopy> remote;
  remote.reserve(static_cast<size_t>(nranks_));
  for (int i = 1; i < nranks_; ++i) {
    const int q = (rank_ + i) % nranks_;
    remote.push_back(gather_push_ ? PeerCopy{shared_[q].recv + static_cast<size_t>(rank_) * block, in}
                                  : PeerCopy{out + static_cast<size_t>(q) * block, shared_[q].send});
  }
  unsigned char* own_copy = own != in ? own : nullptr;  // none in place
  BRAID_TRY(gather_batch_ && !sync.captured ? queue_batch(own_copy, in, remote, head, stream, sync)
                                            : queue_on_streams(own_copy, in, remote, head, stream, sync));
  // Tell the peers this rank's copies are done, and wait until theirs are too.
  return meet(stream, sync, kGraphReadsDone);
}

Result PeerPath::queue_on_streams(unsigned char* own, const unsigned char* in, const std::vector<PeerCopy>& remote,
                                  size_t bytes, cudaStream_t stream, const CallSync& sync) {
  const std::vector<cudaStream_t>& streams = *sync.pulls;
  const std::vector<cudaEvent_t>& joins = *sync.pull_joins;
  // The first peer's copy goes on the call's stream; this rank's own block (out of place) and the
  // other peers' on streams of their own, forked and joined only where there are any: in place at
  // two ranks the call queues one copy and no event.
  std::vector<PeerCopy> side;
  if (own != nullptr) side.push_back({own, in});
  side.insert(side.end(), remote.begin() + std::min<size_t>(1, remote.size()), remote.end());
  const size_t forks = std::min(side.size(), streams.size());
  if (forks > 0) BRAID_TRY(cuda(cudaEventRecord(sync.fork, stream), "cudaEventRecord (fork)"));
  for (size_t i = 0; i < forks; ++i)
    BRAID_TRY(cuda(cudaStreamWaitEvent(streams[i], sync.fork, 0), "cudaStreamWaitEvent"));
  for (size_t j = 0; j < side.size(); ++j) {
    cudaStream_t s = streams[j % streams.size()];
    // This rank's own block by the SMs where aligned: the same copy by the runtime costs the
    // calling thread about 4 us more (cuda::copy_on_sms).
    if (side[j].to == own && cuda::copy_on_sms(own, in, bytes, s) == cudaSuccess) continue;
    BRAID_TRY(cuda(cudaMemcpyAsync(side[j].to, side[j].from, bytes, cudaMemcpyDeviceToDevice, s),
                   side[j].to == own ? "cudaMemcpyAsync (own block)" : "cudaMemcpyAsync (a block over NVLink)"));
  }
  if (!remote.empty())
    BRAID_TRY(cuda(cudaMemcpyAsync(remote[0].to, remote[0].from, bytes, cudaMemcpyDeviceToDevice, stream),
                   "cudaMemcpyAsync (a block over NVLink)"));
  for (size_t i = 0; i < forks; ++i) {
    BRAID_TRY(cuda(cudaEventRecord(joins[i], streams[i]), "cudaEventRecord (join)"));
    BRAID_TRY(cuda(cudaStreamWaitEvent(stream, joins[i], 0), "cudaStreamWaitEvent (join)"));
  }
  return Result::Success;
}

Result PeerPath::queue_batch(unsigned char* own, const unsigned char* in, const std::vector<PeerCopy>& remote,
                             size_t bytes, cudaStream_t stream, const CallSync& sync) {
  // On a stream of the path's own (a batch refuses the legacy default stream, which a caller may
  // use), beside this rank's own block on the call's.
  cudaStream_t side = (*sync.pulls)[0];
  cudaEvent_t joined = (*sync.pull_joins)[0];
  BRAID_TRY(cuda(cudaEventRecord(sync.fork, stream), "cudaEventRecord (fork)"));
  BRAID_TRY(cuda(cudaStreamWaitEvent(side, sync.fork, 0), "cudaStreamWaitEvent"));
  std::vector<void*> to;
  std::vector<const void*> from;
  for (const PeerCopy& copy : remote) to.push_back(copy.to), from.push_back(copy.from);
  const std::vector<size_t> sizes(remote.size(), bytes);
  cudaMemcpyAttributes attributes{};
  attributes.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
  attributes.flags = cudaMemcpyFlagPreferOverlapWithCompute;
  size_t first = 0;
  if (!remote.empty())
    BRAID_TRY(cuda(cudaMemcpyBatchAsync(to.data(), from.data(), sizes.data(), remote.size(), &attributes, &first, 1, side),
                   "cudaMemcpyBatchAsync (blocks over NVLink)"));
  if (own != nullptr && cuda::copy_on_sms(own, in, bytes, stream) != cudaSuccess)
    BRAID_TRY(cuda(cudaMemcpyAsync(own, in, bytes, cudaMemcpyDeviceToDevice, stream), "cudaMemcpyAsync (own block)"));
  BRAID_TRY(cuda(cudaEventRecord(joined, side), "cudaEventRecord (join)"));
  return cuda(cudaStreamWaitEvent(stream, joined, 0), "cudaStreamWaitEvent (join)");
}

// AllReduce: the share [0, elements) is cut into one part per rank (on kPartAlignBytes); each
// rank reduces its part of every rank's input and stores the result into its part of every
// rank's output, so every element is computed once and every rank gets the same bits. Only the
// share's own stream waits on peers' counters (the copy stream of the pulls waits on local events
// only).
Result PeerPath::enqueue_all_reduce(const void* send, void* recv, DataType type, RedOp op, size_t elements,
                                    cudaStream_t stream, const CallSync& sync) {
  const size_t esize = datatype_size(type);
  // From the threshold on the peers' inputs are pulled through scratch, which run() made (not in
  // a graph: the scratch is shared with the calls outside it).
  const bool pull = !sync.captured && pulls(elements, esize);
  if (pull && pull_scratch_bytes(esize) > scratch_bytes_)
    return fail(Result::InternalError, "NVLink copy-engine path: the pull scratch is smaller than the call needs");

  // Every rank's inputs are ready and its output is free to be written.
  BRAID_TRY(meet(stream, sync, kGraphInputsReady));

  const ElementRange mine = peer::reduce_part(rank_, nranks_, elements, esize);
  if (mine.count > 0) BRAID_TRY(reduce_part(send, recv, type, op, mine.begin, mine.count, pull, stream));

  // This rank has read the peers' inputs and written their outputs; the share ends when all have.
  return meet(stream, sync, kGraphReadsDone);
}

bool PeerPath::pulls(size_t elements, size_t esize) const {
  const int64_t pull_min = settings().nvlink_pull_min_bytes;
  return pull_min >= 0 && elements * esize >= static_cast<size_t>(pull_min);
}

size_t PeerPath::pull_piece(size_t esize) const {
  return pull_piece_elements(nranks_, esize, settings().nvlink_scratch_bytes);
}

size_t PeerPath::pull_slot_bytes(size_t esize) const {
  return peer::pull_slot_bytes(nranks_, esize, settings().nvlink_scratch_bytes);
}

Result PeerPath::ensure_scratch(size_t bytes) {
  if (bytes <= scratch_bytes_) return Result::Success;
  // The old scratch may still be read by earlier calls: drain them before freeing it.
  BRAID_TRY(cuda(cudaEventSynchronize(last_done_), "cudaEventSynchronize"));
  if (scratch_ != nullptr) cudaFree(scratch_);
  scratch_ = nullptr;
  scratch_bytes_ = 0;
  BRAID_TRY(cuda(cudaMalloc(&scratch_, bytes), "cudaMalloc (NVLink pull scratch)"));
  scratch_bytes_ = bytes;
  // What braid holds is said where it is allocated (the engines' at INIT, this at its first use).
  BRAID_INFO(Init, "NVLink copy-engine path (GPU %d): %zu bytes of device scratch for AllReduce pulls "
             "(BRAID_NVLINK_SCRATCH_BYTES)", device_, bytes);
  return Result::Success;
}

Result PeerPath::reduce_part(const void* send, void* recv, DataType type, RedOp op, size_t begin, size_t n, bool pull,
                             cudaStream_t stream) {
  const size_t esize = datatype_size(type);
  const auto* in = static_cast<const unsigned char*>(send);
  auto* out = static_cast<unsigned char*>(recv);
  cuda::PeerOperands o;
  o.n_inputs = nranks_;
  o.n_outputs = nranks_;
  // Outputs: this rank's first, then every peer's.
  auto set_outputs = [&](size_t at) {
    o.outputs[0] = out + at * esize;
    for (int q = 0, j = 1; q < nranks_; ++q)
      if (q != rank_) o.outputs[j++] = shared_[q].recv + at * esize;
  };
  auto launch = [&](size_t count) {
    return cuda(cuda::reduce_to_all(type, op, o, count, stream, cuda::kPeerReduceBlocks, cuda::kPeerReduceThreads),
                "reduce_to_all (a reduction part over NVLink)");
  };
  if (!pull) {
    for (int q = 0; q < nranks_; ++q) o.inputs[q] = (q == rank_ ? in : shared_[q].send) + begin * esize;
    set_outputs(begin);
    return launch(n);
  }

  // Pieces of every peer's part pulled by the copy engines into one of two scratch slots while
  // the kernel reduces the other slot's.
  const size_t piece = pull_piece(esize), slot_bytes = pull_slot_bytes(esize);
  auto* scratch = static_cast<unsigned char*>(scratch_);
  BRAID_TRY(cuda(cudaEventRecord(fork_, stream), "cudaEventRecord (fork)"));
  BRAID_TRY(cuda(cudaStreamWaitEvent(copy_in_, fork_, 0), "cudaStreamWaitEvent"));
  size_t k = 0;
  for (size_t at = begin; at < begin + n; at += piece, ++k) {
    const size_t count = std::min(piece, begin + n - at);
    const size_t slot = k % 2;
    unsigned char* base = scratch + slot * slot_bytes;
    if (k >= 2) BRAID_TRY(cuda(cudaStreamWaitEvent(copy_in_, reduced_[slot], 0), "cudaStreamWaitEvent (slot free)"));
    for (int q = 0, i = 0; q < nranks_; ++q) {
      if (q == rank_) {
        o.inputs[q] = in + at * esize;
        continue;
      }
      unsigned char* into = base + static_cast<size_t>(i++) * piece * esize;
      BRAID_TRY(cuda(cudaMemcpyAsync(into, shared_[q].send + at * esize, count * esize, cudaMemcpyDeviceToDevice,
                                     copy_in_),
                     "cudaMemcpyAsync (a peer's piece over NVLink)"));
      o.inputs[q] = into;
    }
    BRAID_TRY(cuda(cudaEventRecord(pulled_[slot], copy_in_), "cudaEventRecord (pulled)"));
    BRAID_TRY(cuda(cudaStreamWaitEvent(stream, pulled_[slot], 0), "cudaStreamWaitEvent (pulled)"));
    set_outputs(at);
    BRAID_TRY(launch(count));
    BRAID_TRY(cuda(cudaEventRecord(reduced_[slot], stream), "cudaEventRecord (reduced)"));
  }
  return Result::Success;
}

}  // namespace braid::peer
