// braid's own NVLink path, for the NVLink share of AllGather and AllReduce (BRAID_NVLINK_PATH,
// docs/MULTIPATH.md):
// - AllGather: each GPU's copy engines pull its peers' blocks over NVLink (cudaMemcpyAsync from
//   another GPU's memory: no SM; out of place, braid's kernel copies the rank's own block). On
//   2x H200 they move 389 GB/s each way at once, where NCCL's AllGather kernels move 243-274 GB/s
//   per direction (bench/nvlink_probe.cu; docs/PERFORMANCE.md). BRAID_NVLINK_GATHER has them push
//   instead, as NCCL's copy-engine collectives do, on streams or in one batch.
// - AllReduce: the share is cut into one part per rank; each rank reduces its part of every
//   rank's input and stores the result into its part of every rank's output (cuda/peer_reduce).
//   Small shares read the peers' inputs from the kernel over NVLink; large ones have the copy
//   engines pull them into scratch first, piece by piece (bench/peer_allreduce_probe.cu, docs/PERFORMANCE.md:
//   1.1-1.6x NCCL's all_reduce alone from 4 MB to 1 GiB).
//
// Ordering between GPUs travels through counters in the engine's registered control segment with
// stream memory operations (as the PCIe engine's): a rank raises `ready` when its input is ready
// and `read_done` once it has read its peers' blocks; its stream waits for every peer's
// `read_done` before the share ends, so the caller may reuse its buffers afterwards (for
// AllReduce `read_done` also means "done writing the peers' outputs"). The one host meeting per
// call is the exchange of buffer addresses (CUDA IPC handles or cuMem allocation records where
// the peer is another process), on the calling thread, which waits for the GPU only to grow the
// pull scratch or to close mappings past the cache's bound.
#pragma once

#include <cuda_runtime.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "api/comm.h"
#include "common/result.h"
#include "common/types.h"
#include "cuda/peer_reduce.h"
#include "engine/control.h"
#include "peer/body_graphs.h"
#include "peer/mapping_cache.h"
#include "peer/peer_layout.h"

namespace braid::peer {

// Which ranks this rank reaches by peer copies, collectively over `comm`: per rank its device here
// (-1: itself or none) and whether it lives in this process. *reachable is false when some peer's
// GPU is not visible or not peer-accessible; a peer on this very GPU in another process counts
// only with BRAID_PEER_SAME_GPU (CUDA IPC on one device, the one-GPU rig). fd_passing is true, on
// every rank, when each rank with a peer in another process runs an fd broker that each such peer
// reached: cuMem allocations can then be shared (allocation_share.h).
struct Peers {
  std::vector<int> device;
  std::vector<bool> same_process;
  bool any_ipc = false;
  bool reachable = true;
  bool fd_passing = false;
};
Result find_peers(braidComm* comm, Peers* out);

class PeerPath {
 public:
  // Collective over `comm`'s ranks. Succeeds with *out set when every GPU can access every other
  // (peer access, same host); otherwise *out stays null and the result says why, on every rank.
  static Result create(braidComm* comm, std::unique_ptr<PeerPath>* out);
  ~PeerPath();
  PeerPath(const PeerPath&) = delete;
  PeerPath& operator=(const PeerPath&) = delete;

  // PreMulSum is not carried: its scalar is each rank's own, which a rank reducing for all would
  // need from every peer. AllReduce reads every rank's buffers in one kernel: up to 8 ranks.
  bool carries(Collective c, RedOp op) const {
    return c == Collective::AllGather ||
           (c == Collective::AllReduce && op != RedOp::PreMulSum && nranks_ <= cuda::kMaxPeerOperands);
  }

  // AllGathers whose blocks were pushed (BRAID_NVLINK_GATHER), rather than pulled.
  uint64_t gathers_pushed() const { return gathers_pushed_; }

  // What run() did with a share, the same on every rank.
  enum class Outcome {
    Carried,      // queued on the stream
    Unshareable,  // nothing queued: some rank's buffer cannot be shared (memory neither CUDA IPC
                  // nor a cuMem fd can export, or null)
  };

  // Elements [0, elements) of every block of an AllGather or AllReduce (NCCL's arguments), queued
  // on `stream` after the work already there; what is queued on `stream` afterwards also waits
  // for the peers' reads of this rank's buffers (and, for AllReduce, their writes into its
  // output). All ranks call it at the same point with the same arguments but the buffers. Where
  // nothing was queued (*outcome), the caller moves the share another way.
  //
  // run() is the calling thread's (it queues GPU work): there it opens a peer's new allocation and
  // grows its scratch, calls that may wait for this GPU's queued work, which never waits for this
  // thread. On braid's progress thread such a call deadlocked PyTorch's DDP, while callers' streams
  // waited for that thread.
  using Publication = std::vector<uint64_t>;
  // What this rank tells its peers of its buffers for run() (the calling thread's).
  void publish(Collective c, const void* send, const void* recv, size_t count, DataType type, size_t elements,
               Publication* out) const;
  //
  // `captured`: `stream` is being captured into a CUDA graph (every rank's call is). The share is
  // then queued so that each replay runs it again: the ranks meet on the GPU through barriers
  // that end where they began (kGraphBarriers), on streams and events of its own, and the peers'
  // mappings it reads stay open while the graph lives. AllReduce reads its peers' inputs from
  // the kernel (no pulled scratch, which calls outside the graph share).
  // `on_met`, where given, is called once the ranks' meetings are over, before anything is queued
  // (the caller's profile: BRAID_CALLER_PROFILE).
  Result run(Collective c, const void* send, void* recv, size_t count, DataType type, RedOp op, size_t elements,
             const Publication& mine, cudaStream_t stream, Outcome* outcome, bool captured = false,
             const std::function<void()>& on_met = {});

 private:
  struct Shared {
    const unsigned char* send = nullptr;  // a peer's buffers as this process addresses them
    unsigned char* recv = nullptr;        // (AllReduce and a pushed AllGather only)
  };

  // How one queued call's ranks meet on the GPU, and the streams and events it uses: counters
  // raised to the call's number, or for a captured call the graph barriers (peer_layout.h).
  struct CallSync {
    bool captured = false;
    uint64_t seq = 0;
    cudaEvent_t fork = nullptr;
    // AllGather's pulls: a stream per peer, each joined by its event.
    const std::vector<cudaStream_t>* pulls = nullptr;
    const std::vector<cudaEvent_t>* pull_joins = nullptr;
  };
  PeerPath() = default;
  CallSync sync_for(bool captured);
  Result cuda(cudaError_t e, const char* what) const;
  // Peer access (within this process), streams and events.
  Result make_resources(const std::vector<int>& peer_device);
  // Publishes this rank's send buffer (and receive buffer, where the call writes the peers') and
  // maps every peer's, opening those not mapped yet; false in *all_shareable when a rank's buffer
  // cannot be exported (or is null). Sets gather_push_ and gather_batch_.
  Result share_buffers(const Publication& mine, Collective c, bool* all_shareable);
  Result find_mapping(const uint64_t* words, uint64_t offset, unsigned char** out);
  Result open_mapping(const MappingCache::Key& handle, unsigned char** base);
  Result enqueue_all_gather(const void* send, void* recv, size_t count, DataType type, size_t elements,
                            cudaStream_t stream, const CallSync& sync);
  // An AllGather's copies of `bytes` each: this rank's own block (`own`, null in place) from `in`,
  // and one per peer, on a stream per peer or in one batch.
  struct PeerCopy {
    unsigned char* to;
    const unsigned char* from;
  };
  Result queue_on_streams(unsigned char* own, const unsigned char* in, const std::vector<PeerCopy>& remote,
                          size_t bytes, cudaStream_t stream, const CallSync& sync);
  Result queue_batch(unsigned char* own, const unsigned char* in, const std::vector<PeerCopy>& remote, size_t bytes,
                     cudaStream_t stream, const CallSync& sync);
  Result enqueue_all_reduce(const void* send, void* recv, DataType type, RedOp op, size_t elements,
                            cudaStream_t stream, const CallSync& sync);
  // Queues `body` (a call's operations, on the stream it is given) on `stream`: from a CUDA graph
  // where the same body (`key`: everything it reads) came before (body_graphs.h), else as it is.
  // Never inside a capture of the caller's.
  using Body = std::function<Result(cudaStream_t)>;
  Result queue_body(const BodyGraphCache::Key& key, cudaStream_t stream, const Body& body);
  Result capture_body(const Body& body, cudaGraphExec_t* out);
  // The mappings this call read stay open until the graph being captured on `stream` is destroyed.
  Result pin_for_graph(cudaStream_t stream);
  // The AllReduce part [begin, begin + n) of every rank, reduced by this one into every rank's
  // output; `pull` has the copy engines bring the peers' inputs into scratch first.
  Result reduce_part(const void* send, void* recv, DataType type, RedOp op, size_t begin, size_t n, bool pull,
                     cudaStream_t stream);
  // A captured call's barrier `step` (GraphBarrierStep) on `stream`: this rank raises the step's
  // state of its kPeerGraphPhase flag, then `stream` waits until every peer has.
  Result graph_barrier(cudaStream_t stream, int step);
  // Meeting point `step` of a call on `stream`: this rank arrives, then `stream` waits until every
  // peer has (outside graphs one batch of stream memory operations on the call's bit).
  Result meet(cudaStream_t stream, const CallSync& sync, int step);
  // Elements of one peer's input per pulled piece, and the bytes of one scratch slot (a piece of
  // every peer's), within BRAID_NVLINK_SCRATCH_BYTES.
  size_t pull_piece(size_t esize) const;
  size_t pull_slot_bytes(size_t esize) const;
  // Whether an AllReduce share of `elements` pulls the peers' inputs (BRAID_NVLINK_PULL_MIN_BYTES),
  // and the scratch it then needs: two slots.
  bool pulls(size_t elements, size_t esize) const;
  size_t pull_scratch_bytes(size_t esize) const { return 2 * pull_slot_bytes(esize); }
  Result ensure_scratch(size_t bytes);

  braidComm* comm_ = nullptr;
  int rank_ = 0, nranks_ = 1, device_ = 0;
  std::vector<bool> same_process_;  // per rank: its buffers are addressed directly
  bool any_ipc_ = false;
  bool fd_passing_ = false;  // cuMem buffers can be shared (Peers::fd_passing)
  uint64_t seq_ = 0;
  std::vector<Shared> shared_;  // per rank, for the current call
  bool gather_push_ = false;    // the current call is an AllGather every rank pushes
  bool gather_batch_ = false;   // ... and this rank in one batch (never inside a capture)
  cudaStream_t copy_in_ = nullptr;  // AllReduce's pulls of the peers' inputs into scratch
  cudaEvent_t fork_ = nullptr;
  cudaEvent_t last_done_ = nullptr;  // the end of the latest call queued
  // Captured calls' own: a capture joins the streams it forks to, and the progress thread may use
  // the others at the same time.
  cudaEvent_t graph_fork_ = nullptr;
  // AllGather's pulls, a stream per peer ([0] outside graphs, [1] captured calls'): at two ranks
  // one stream, with no idle second one to fork and join. At 4 ranks on 4x H200 three concurrent
  // pulls were no faster than two (bench/results/gpus4-pulls/).
  std::vector<cudaStream_t> pulls_[2];
  std::vector<cudaEvent_t> pull_joins_[2];
  // AllReduce's pulled pieces: two slots of scratch, each holding one piece of every peer's input.
  void* scratch_ = nullptr;
  size_t scratch_bytes_ = 0;
  cudaEvent_t pulled_[2] = {}, reduced_[2] = {};
  // Calls replayed from graphs, captured on a stream of their own (BRAID_NVLINK_BODY_GRAPHS); off
  // for good after a capture fails.
  BodyGraphCache bodies_;
  cudaStream_t capture_ = nullptr;
  bool body_graphs_ = true;
  uint64_t queued_alone_ = 0;  // calls queued one operation at a time (said at the end, INFO)
  uint64_t gathers_pushed_ = 0;
  // The peers' allocations opened from their records.
  static constexpr size_t kMaxMappings = 64;
  std::unique_ptr<MappingCache> opened_;
  std::shared_ptr<MappingPins> pins_ = std::make_shared<MappingPins>();
  std::vector<MappingCache::Key> call_keys_;  // the peers' allocations the current call reads
  // The mapping cache and call_keys_ (graphs captured on another thread pin what a call read).
  std::mutex mapping_mutex_;
};

}  // namespace braid::peer
