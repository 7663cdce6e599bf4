// NIMBLE's routed exchange behind the NCCL API (BRAID_ROUTE_EXCHANGES, docs/ROUTING.md): an
// ncclAlltoAll, ncclGather or ncclScatter routed over the topology's direct and 2-hop relay paths
// (route/router.h), cut into byte ranges (route/exchange_plan.h) and run by engine::run_exchange
// as copy-engine peer copies into the peers' receive buffers and relays' scratch (CUDA IPC, or a
// cuMem allocation's fd, where the peer is another process: allocation_share.h).
//
// Stream-ordered and asynchronous: the copies go on two streams of this path forked from the
// caller's stream and joined back to it by events; ordering between GPUs travels through three
// counters per rank in the control segment, waited on and raised by stream memory operations
// (cuStreamWaitValue64 / cuStreamWriteValue64 through the CUDA backend, as the NVLink path's). No
// host thread takes part once the call has queued its work, so none is needed after it returns.
// The one host meeting per call is the exchange of receive-buffer handles (and of the relays'
// scratch when it grows), as the NVLink path's.
//
// Agreement: every rank routes the same matrix (these collectives' counts are every rank's) with
// the same router history, so every rank builds the same plan and makes the same decision;
// whether every rank's buffers can be shared is agreed in the handle exchange.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "api/comm.h"
#include "api/from_nccl.h"
#include "common/result.h"
#include "common/types.h"
#include "engine/communicator.h"
#include "engine/routed_exchange.h"
#include "peer/mapping_cache.h"
#include "route/exchange_plan.h"
#include "route/grouped_exchange.h"
#include "route/router.h"

namespace braid::peer {

class RoutedPath {
 public:
  // Collective over the NCCL communicator's ranks (all call it at the same point). Fails, on every
  // rank alike, where some rank cannot reach every other by peer copies.
  // With `id` (the same on every rank), braid's communicator is made from it instead of through an
  // ncclBroadcast on `comm`: for ranks that met elsewhere than at a collective call on `comm` (a
  // send/recv group agreed on the exchange board, engine/exchange_board.h).
  static Result create(ncclComm_t comm, const nccl::NcclCalls& nccl, std::unique_ptr<RoutedPath>* out,
                       const engine::CommId* id = nullptr);
  ~RoutedPath();
  RoutedPath(const RoutedPath&) = delete;
  RoutedPath& operator=(const RoutedPath&) = delete;

  // An exchange every rank knows the layout of without a meeting (the same `layout` on every rank:
  // route::alltoall_layout, gather_layout, scatter_layout), packed: this rank's blocks at the
  // layout's offsets in its one send and one receive buffer. A buffer the layout gives this rank
  // nothing in is never read, written or shared (route::packed_buffers_usable). On `stream`; the
  // caller sends exchanges smaller than BRAID_ROUTE_MIN_BYTES per flow to NCCL, every rank alike.
  // After a failure every call fails (never a silent fallback to NCCL: the peers' state is
  // unknown). *routed false, on every rank alike, when the routing keeps every flow direct
  // (BRAID_ROUTE_EXCHANGES=1) or a rank's buffers cannot be shared: nothing was queued and the
  // caller gives the call to NCCL.
  Result exchange(const route::ExchangeLayout& layout, const void* send, void* recv, cudaStream_t stream, bool* routed);
  // ncclAlltoAll(send, recv, count, type): exchange() of route::alltoall_layout.
  Result alltoall(const void* send, void* recv, size_t count, DataType type, cudaStream_t stream, bool* routed);
  // A group of ncclSend/ncclRecv every rank agreed on (route/grouped_exchange.h): `layout` is
  // agree_on_exchange's (every rank's), `flows` this rank's calls; each flow keeps its own buffers,
  // whose receive ends are shared in the handle exchange. As exchange() otherwise.
  Result grouped(const route::ExchangeLayout& layout, const route::RankFlows& flows, cudaStream_t stream,
                 bool* routed);
  // Why the latest exchange() or grouped() that left *routed false queued nothing (the same on
  // every rank); for the caller's log.
  const char* declined() const { return declined_; }

  // The first failure of a routed exchange (Success: none), with its text; an exchange that has not
  // ended BRAID_TIMEOUT seconds after it was queued counts as failed, and the path is aborted on
  // every rank so that no stream stays parked. Any thread.
  Result failure(std::string* text);
  // Stops every wait of the path on every rank (streams parked on a counter are released).
  void abort();

 private:
  RoutedPath() = default;
  Result cuda(cudaError_t e, const char* what) const;
  Result record_failure(Result r);
  // Every rank's receive buffer mapped here (null where `layout` has the rank receive nothing),
  // and whether all could be shared.
  Result share_receive_buffers(const route::ExchangeLayout& layout, const void* send, void* recv, bool* all_shareable);
  // Every rank's receive flows (`flows`' own, then the peers'), mapped here, into peer_flows_.
  Result share_flow_buffers(const route::RankFlows& flows, bool* all_shareable);
  // What exchange() and grouped() share: routes `layout`, has `share` share the receive buffers
  // (false: some rank's cannot be), and queues the plan on the buffers `buffers` makes.
  Result run(const route::ExchangeLayout& layout, const std::function<Result(bool*)>& share,
             const std::function<engine::ExchangeBuffers()>& buffers, cudaStream_t stream, bool* routed);
  // Queues this rank's part of `plan` on `stream` with `buffers` (every flow's, as this rank
  // addresses them; the relays' scratch is this path's, set here) as exchange `epoch_ + 1`. Every
  // rank calls it for the same plan; a failure aborts the path on every rank.
  Result queue_exchange(const route::ExchangePlan& plan, engine::ExchangeBuffers buffers, cudaStream_t stream);
  // This rank's scratch at least `bytes[rank]`, and every peer's mapped (collective: every rank has
  // the same plan, so all grow at the same call).
  Result ensure_scratch(const std::vector<size_t>& bytes);
  Result map_peer(int q, const uint64_t* words, unsigned char** out);

  braidComm_t braid_ = nullptr;
  int rank_ = 0, nranks_ = 1, device_ = 0;
  std::vector<bool> same_process_;
  bool fd_passing_ = false;  // cuMem buffers can be shared (Peers::fd_passing)
  route::Router router_;
  route::Routing routing_;
  uint64_t epoch_ = 0;
  const char* declined_ = "";
  cudaStream_t streams_[2] = {};  // the exchange's send and relay queues
  cudaEvent_t fork_ = nullptr, joins_[2] = {}, last_done_ = nullptr;
  std::vector<unsigned char*> peer_recv_, peer_scratch_;  // per rank, for the current call
  std::vector<route::RankFlows> peer_flows_;             // per rank, for the current grouped call
  void* scratch_ = nullptr;
  size_t scratch_bytes_ = 0;
  std::vector<size_t> scratch_known_;  // every rank's scratch size as last shared
  std::unique_ptr<MappingCache> opened_;

  std::mutex failure_mutex_;
  std::atomic<int> failed_{0};
  std::string failure_text_;
  std::atomic<bool> in_flight_{false};
  std::chrono::steady_clock::time_point queued_at_;  // under failure_mutex_
};

}  // namespace braid::peer
