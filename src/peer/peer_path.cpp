#include "peer/peer_path.h"

#include <cuda.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "common/log.h"
#include "engine/control.h"

namespace braid::peer {

namespace {

using engine::RankRecord;

// Words of one rank's buffer record in the per-call exchange: the send pointer (for peers in
// this process), its offset in the exported allocation and the allocation's IPC handle (for the
// others), and whether it could be exported.
constexpr int kHandleWords = 8;
constexpr int kSendPointer = 0, kSendOffset = 1, kSendHandle = 2, kUnshareable = kSendHandle + kHandleWords,
              kBufferWords = kUnshareable + 1;
static_assert(sizeof(cudaIpcMemHandle_t) == kHandleWords * sizeof(uint64_t));
static_assert(kBufferWords <= engine::kExchangeSlots);

// The allocation that holds `p` (IPC exports whole allocations), through the runtime's driver
// entry point so that no binary links libcuda.
Result allocation_base(const void* p, const unsigned char** base) {
  using Fn = CUresult (*)(CUdeviceptr*, size_t*, CUdeviceptr);
  static Fn fn = [] {
    void* f = nullptr;
    cudaDriverEntryPointQueryResult found{};
    if (cudaGetDriverEntryPointByVersion("cuMemGetAddressRange", &f, 12000, cudaEnableDefault, &found) !=
            cudaSuccess ||
        found != cudaDriverEntryPointSuccess) {
      cudaGetLastError();
      return static_cast<Fn>(nullptr);
    }
    return reinterpret_cast<Fn>(f);
  }();
  if (fn == nullptr) return fail(Result::UnhandledCudaError, "the CUDA driver lacks cuMemGetAddressRange");
  CUdeviceptr b = 0;
  size_t size = 0;
  if (fn(&b, &size, reinterpret_cast<CUdeviceptr>(p)) != CUDA_SUCCESS)
    return fail(Result::InvalidArgument, "buffer %p is not device memory CUDA knows", p);
  *base = reinterpret_cast<const unsigned char*>(b);
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

  // Which GPU each rank drives, by PCI address (device numbers differ between processes), and
  // in which process.
  cudaDeviceProp prop{};
  BRAID_TRY(p->cuda(cudaGetDeviceProperties(&prop, p->device_), "cudaGetDeviceProperties"));
  const uint64_t mine[4] = {static_cast<uint64_t>(prop.pciDomainID), static_cast<uint64_t>(prop.pciBusID),
                            static_cast<uint64_t>(prop.pciDeviceID), static_cast<uint64_t>(getpid())};
  std::vector<uint64_t> all;
  BRAID_TRY(comm->engine->exchange(mine, &all));
  // Whether this rank reaches every peer: a peer's GPU must be visible here and peer-accessible.
  uint64_t reachable = 1;
  std::vector<int> peer_device(p->nranks_, -1);
  p->same_process_.assign(p->nranks_, false);
  for (int q = 0; q < p->nranks_; ++q) {
    p->same_process_[q] = all[4 * q + 3] == static_cast<uint64_t>(getpid());
    if (q == p->rank_) continue;
    p->any_ipc_ |= !p->same_process_[q];
    char bus[32];
    std::snprintf(bus, sizeof bus, "%04x:%02x:%02x.0", static_cast<unsigned>(all[4 * q]),
                  static_cast<unsigned>(all[4 * q + 1]), static_cast<unsigned>(all[4 * q + 2]));
    int dev = -1, can = 0;
    if (cudaDeviceGetByPCIBusId(&dev, bus) != cudaSuccess) {
      cudaGetLastError();
      reachable = 0;
      continue;
    }
    if (dev == p->device_ || cudaDeviceCanAccessPeer(&can, p->device_, dev) != cudaSuccess || can == 0) {
      cudaGetLastError();
      reachable = 0;
      continue;
    }
    peer_device[q] = dev;
  }
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
  BRAID_INFO(Init, "rank %d/%d on GPU %d: NVLink copy-engine path to every peer (%s)", p->rank_, p->nranks_,
             p->device_, p->any_ipc_ ? "CUDA IPC" : "one process");
  *out = std::move(p);
  return Result::Success;
}

Result PeerPath::make_resources(const std::vector<int>& peer_device) {
  for (int q = 0; q < nranks_; ++q) {
    if (q == rank_ || !same_process_[q]) continue;
    const cudaError_t e = cudaDeviceEnablePeerAccess(peer_device[q], 0);
    if (e == cudaErrorPeerAccessAlreadyEnabled) cudaGetLastError();
    else BRAID_TRY(cuda(e, "cudaDeviceEnablePeerAccess"));
  }
  for (cudaStream_t* s : {&copy_in_, &copy_out_})
    BRAID_TRY(cuda(cudaStreamCreateWithFlags(s, cudaStreamNonBlocking), "cudaStreamCreate"));
  BRAID_TRY(cuda(cudaEventCreateWithFlags(&fork_, cudaEventDisableTiming), "cudaEventCreate"));
  for (int i = 0; i < 2; ++i) {
    cudaEvent_t e = nullptr;
    BRAID_TRY(cuda(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate"));
    joins_.push_back(e);
  }
  return Result::Success;
}

PeerPath::~PeerPath() {
  cudaSetDevice(device_);
  for (cudaStream_t s : {copy_in_, copy_out_})
    if (s != nullptr) cudaStreamSynchronize(s), cudaStreamDestroy(s);
  if (fork_ != nullptr) cudaEventDestroy(fork_);
  for (cudaEvent_t e : joins_) cudaEventDestroy(e);
  for (auto& [handle, mapping] : opened_) cudaIpcCloseMemHandle(mapping.base);
}

Result PeerPath::open_handle(const uint64_t* words, uint64_t offset, const unsigned char** out) {
  std::array<uint64_t, kHandleWords> key;
  std::copy(words, words + kHandleWords, key.begin());
  auto it = opened_.find(key);
  if (it == opened_.end()) {
    // A handle names one allocation: a buffer freed and made again gets a new handle, so a cached
    // mapping is never stale. But a mapping keeps the peer's freed allocation alive, so mappings
    // are bounded: past kMaxMappings, those the previous call did not use are closed, once this
    // rank's copies have drained (closing one under a copy in flight would fault it).
    if (opened_.size() >= kMaxMappings) {
      for (cudaStream_t s : {copy_in_, copy_out_}) BRAID_TRY(cuda(cudaStreamSynchronize(s), "cudaStreamSynchronize"));
      size_t closed = 0;
      for (auto m = opened_.begin(); m != opened_.end();) {
        if (m->second.last_call + 1 >= seq_) {
          ++m;
          continue;
        }
        cudaIpcCloseMemHandle(m->second.base);
        m = opened_.erase(m);
        ++closed;
      }
      BRAID_INFO(Alloc, "NVLink copy-engine path: closed %zu peer mappings not used lately (%zu stay open)", closed,
                 opened_.size());
    }
    cudaIpcMemHandle_t h;
    std::memcpy(&h, words, sizeof h);
    void* p = nullptr;
    BRAID_TRY(cuda(cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess), "cudaIpcOpenMemHandle"));
    it = opened_.emplace(key, Mapping{static_cast<unsigned char*>(p), 0}).first;
  }
  it->second.last_call = seq_ + 1;  // the call about to be queued
  *out = it->second.base + offset;
  return Result::Success;
}

Result PeerPath::share_buffers(const void* send, const void* recv, bool* all_shareable) {
  uint64_t mine[kBufferWords] = {};
  mine[kSendPointer] = reinterpret_cast<uint64_t>(send);
  // A null buffer is bad input: NCCL, which then moves the share on every rank, reports it as it
  // does without braid.
  if (send == nullptr || recv == nullptr) mine[kUnshareable] = 1;
  if (any_ipc_ && mine[kUnshareable] == 0) {
    const unsigned char* base = nullptr;
    cudaIpcMemHandle_t h;
    if (allocation_base(send, &base) != Result::Success ||
        cudaIpcGetMemHandle(&h, const_cast<unsigned char*>(base)) != cudaSuccess) {
      cudaGetLastError();
      mine[kUnshareable] = 1;
    } else {
      mine[kSendOffset] = static_cast<uint64_t>(static_cast<const unsigned char*>(send) - base);
      std::memcpy(&mine[kSendHandle], &h, sizeof h);
    }
  }
  std::vector<uint64_t> all;
  BRAID_TRY(comm_->engine->exchange(mine, &all));
  *all_shareable = true;
  for (int q = 0; q < nranks_; ++q) *all_shareable = *all_shareable && all[q * kBufferWords + kUnshareable] == 0;
  if (!*all_shareable) return Result::Success;
  for (int q = 0; q < nranks_; ++q) {
    const uint64_t* theirs = &all[static_cast<size_t>(q) * kBufferWords];
    if (q == rank_ || same_process_[q]) {
      shared_[q].send = reinterpret_cast<const unsigned char*>(theirs[kSendPointer]);
      continue;
    }
    BRAID_TRY(open_handle(&theirs[kSendHandle], theirs[kSendOffset], &shared_[q].send));
  }
  return Result::Success;
}

Result PeerPath::run(Collective c, const void* send, void* recv, size_t count, DataType type, size_t elements,
                     cudaStream_t stream, bool* carried) {
  *carried = false;
  if (!carries(c))
    return fail(Result::InternalError, "NVLink copy-engine path: %s is not carried",
                std::string(collective_name(c)).c_str());
  BRAID_TRY(cuda(cudaSetDevice(device_), "cudaSetDevice"));
  bool shareable = false;
  Result r = share_buffers(send, recv, &shareable);
  if (r == Result::Success && !shareable) return Result::Success;
  *carried = true;
  if (r == Result::Success) r = enqueue(send, recv, count, type, elements, stream);
  if (r != Result::Success) {
    // Peers' streams may already wait for this rank's signals: release them and abort the
    // communicator, so that every rank's next call fails instead of hanging.
    const std::string why = last_error();
    comm_->engine->peer_signal(rank_, &RankRecord::peer_ready)->store(~0ull >> 1);
    comm_->engine->peer_signal(rank_, &RankRecord::peer_read_done)->store(~0ull >> 1);
    comm_->engine->abort();
    return fail(r, "%s (the communicator is aborted)", why.c_str());
  }
  return Result::Success;
}

Result PeerPath::enqueue(const void* send, void* recv, size_t count, DataType type, size_t elements,
                         cudaStream_t stream) {
  const uint64_t seq = ++seq_;
  auto signal = [&](int q, std::atomic<uint64_t> RankRecord::*which) { return comm_->engine->peer_signal(q, which); };
  cuda::CudaBackend& dev = *comm_->backend;
  const cudaStream_t helpers[2] = {copy_in_, copy_out_};

  BRAID_TRY(dev.raise_on_stream(stream, {signal(rank_, &RankRecord::peer_ready), seq}));
  BRAID_TRY(cuda(cudaEventRecord(fork_, stream), "cudaEventRecord (fork)"));
  for (cudaStream_t s : helpers) {
    BRAID_TRY(cuda(cudaStreamWaitEvent(s, fork_, 0), "cudaStreamWaitEvent"));
    // Before any read of a peer's buffers: that peer's inputs are ready (its stream got here).
    for (int q = 0; q < nranks_; ++q)
      if (q != rank_) BRAID_TRY(dev.wait_on_stream(s, {signal(q, &RankRecord::peer_ready), seq}));
  }

  const size_t esize = datatype_size(type);
  const size_t block = count * esize, head = elements * esize;
  const auto* in = static_cast<const unsigned char*>(send);
  auto* out = static_cast<unsigned char*>(recv);
  unsigned char* own = out + static_cast<size_t>(rank_) * block;
  if (own != in)
    BRAID_TRY(cuda(cudaMemcpyAsync(own, in, head, cudaMemcpyDeviceToDevice, stream), "cudaMemcpyAsync (own block)"));
  // Peers in rank order from the next one, on two streams, so that with more than two GPUs no
  // peer is read by everyone at once.
  for (int i = 1; i < nranks_; ++i) {
    const int q = (rank_ + i) % nranks_;
    BRAID_TRY(cuda(cudaMemcpyAsync(out + static_cast<size_t>(q) * block, shared_[q].send, head,
                                   cudaMemcpyDeviceToDevice, helpers[i % 2]),
                   "cudaMemcpyAsync (a peer's block over NVLink)"));
  }

  // Join, tell the peers this rank has read what it needs, and wait until they have too.
  for (int i = 0; i < 2; ++i) {
    BRAID_TRY(cuda(cudaEventRecord(joins_[i], helpers[i]), "cudaEventRecord (join)"));
    BRAID_TRY(cuda(cudaStreamWaitEvent(stream, joins_[i], 0), "cudaStreamWaitEvent (join)"));
  }
  BRAID_TRY(dev.raise_on_stream(stream, {signal(rank_, &RankRecord::peer_read_done), seq}));
  for (int q = 0; q < nranks_; ++q)
    if (q != rank_) BRAID_TRY(dev.wait_on_stream(stream, {signal(q, &RankRecord::peer_read_done), seq}));
  return Result::Success;
}

}  // namespace braid::peer
