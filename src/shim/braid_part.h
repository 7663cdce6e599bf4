// braid's part of one NCCL communicator, as the drop-in holds it: the orchestrator of its split
// calls, made at the first collective worth splitting (collectively: every rank reaches that same
// call), the paths the ranks admitted, the staging for buffers braid's paths cannot take, the
// routed exchange and send/recv board, the PreMulSum operators the application made (which braid
// remakes on its own side) and the first failure.
#pragma once

#include <nccl.h>

#include <array>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "engine/exchange_board.h"
#include "multipath/admission.h"
#include "multipath/orchestrator.h"
#include "peer/routed_path.h"
#include "shim/arguments.h"
#include "shim/staging_memory.h"

namespace braid::shim {

// The settings a communicator's calls are decided by, read once when braid learns of it.
struct PartOptions {
  size_t agree_from = size_t{1} << 20;  // the first call of this size agrees the paths (BRAID_SPLIT_MIN_BYTES if set)
  multipath::GroupHolding group_holding = multipath::GroupHolding::Auto;  // BRAID_SPLIT_GROUPS
  size_t group_min_bytes = 0;           // BRAID_SPLIT_GROUPS_MIN_BYTES
  size_t route_min_bytes = 0;           // BRAID_ROUTE_MIN_BYTES
  static PartOptions from_settings();
};

struct BraidPart {
  const PartOptions options = PartOptions::from_settings();
  // A rank's buffers staged through device memory (staged_call.h). First, so that it goes last,
  // after the orchestrator whose share may use it.
  StagingMemory staging;
  std::mutex mutex;  // held by the thread issuing a collective on the communicator
  bool attempted = false;  // braid's part was made, or will never be: `orchestrator` says which
  std::unique_ptr<multipath::Orchestrator> orchestrator;  // null: NCCL alone
  // The paths every rank admits (multipath/paths_admitted.h), agreed at the first call of 1 MiB or
  // more, and the sizes from which each takes a call: braid makes its part at the first call one
  // of them takes. The settings are read once then (`agreed_by`), and the orchestrator is made by them.
  std::optional<multipath::PathsAdmitted> admitted;
  multipath::PathThresholds thresholds;
  multipath::OrchestratorOptions agreed_by;
  std::atomic<multipath::Orchestrator*> live{nullptr};    // for ncclCommAbort from another thread
  // Every PreMulSum operator NCCL made on the communicator and has not destroyed: the argument
  // checks need them all (braid's paths leave PreMulSum calls to NCCL).
  std::map<ncclRedOp_t, multipath::PreMulSumSpec> premulsum;
  // The first failure of braid's share on this communicator (ncclCommGetAsyncError reports it).
  // Its own lock: the watchdog thread asks while a collective may hold `mutex` for long.
  std::mutex failure_mutex;
  std::atomic<int> failure{0};
  std::string failure_text;  // under failure_mutex
  int compute_major = -1;  // the GPU's compute capability, read at the first FP8 reduction split
  // Buffers found usable before (device memory of this GPU, or managed): asking CUDA costs about a
  // microsecond per buffer, and an application passes the same few buffers again and again. A
  // buffer stays usable until it is freed, and a freed buffer NCCL itself would fault on.
  std::array<const void*, 64> usable_buffers{};
  // The routed exchange (BRAID_ROUTE_EXCHANGES), made at the first all-to-all, gather or scatter
  // worth routing.
  bool routed_attempted = false;
  std::unique_ptr<peer::RoutedPath> routed;  // null: NCCL alone
  std::atomic<peer::RoutedPath*> routed_live{nullptr};  // for ncclCommAbort / GetAsyncError
  // Grouped ncclSend/ncclRecv (grouped_p2p.h): the id every rank derived alone when the
  // communicator was made (from the NCCL unique id, or the parent's id for a split), the exchange
  // board named from it (null: none), the ncclCommSplit calls made on this communicator (a
  // child's id) and the ncclAlltoAll calls routing considered (compared at every slot).
  std::optional<engine::CommId> board_id;
  std::unique_ptr<engine::ExchangeBoard> board;
  uint64_t splits = 0;
  uint64_t alltoalls = 0;
  // Why the communicator has no board, when routing is on (null: it has one, or is still to open
  // it); said when its first send/recv group goes to NCCL for want of one.
  const char* no_board_why = nullptr;
  // The RouteDecline reasons already said for this communicator (each said once).
  std::atomic<uint32_t> declines_said{0};
  // The admission reasons already said at INFO for this communicator (multipath::AdmissionReason bits).
  std::atomic<uint32_t> admissions_said{0};
};

// Why braid's routed exchange (BRAID_ROUTE_EXCHANGES) left an exchange on a communicator to NCCL:
// each reason is said once per communicator (say_declined), so that a job whose exchanges never
// route can tell why from its log. A board turned off says so itself (grouped_p2p.cpp).
enum class RouteDecline : uint32_t {
  NonBlocking = 1u << 0,      // the communicator is non-blocking
  NotReady = 1u << 1,         // its rank, size or GPU is not known
  NoBoard = 1u << 2,          // a send/recv group on a communicator without an exchange board
  SmallGroup = 1u << 3,       // a send/recv group's largest flow under BRAID_ROUTE_MIN_BYTES
  SmallCollective = 1u << 4,  // an ncclAlltoAll/Gather/Scatter's flows under BRAID_ROUTE_MIN_BYTES
  InGroup = 1u << 5,          // an ncclAlltoAll/Gather/Scatter inside an NCCL group
  Unroutable = 1u << 6,       // a rank's group has several streams, or is captured in a CUDA graph
  Captured = 1u << 7,         // an ncclAlltoAll/Gather/Scatter captured in a CUDA graph
  PathDeclined = 1u << 8,     // the routed path queued nothing (RoutedPath::declined)
};
// Says at INFO (Coll) why an exchange on `comm` went to NCCL, the first time `why` happens on it.
[[gnu::format(printf, 5, 6)]] void say_declined(ncclComm_t comm, BraidPart& path, int rank, RouteDecline why,
                                                const char* fmt, ...);

// The calling thread's NCCL group, as the decision sees it.
struct Grouping {
  bool in_group = false;
  bool defers = false;  // the group still holds its collectives back (GroupState::deferring, no send/recv held)
};
// What the shim did with a collective.
enum class Handled {
  Nccl,  // nothing: the caller gives it to NCCL alone
  Held,  // inside a group: the caller holds it, to be split at the group's end (group_split.h)
  Ran,   // split (or answered with an error); `result` is the call's result
};
// One decision per call (multipath::admit), with its reason said in the log and the split trace,
// then acted on: the part made at the first call it may take, the call split, staged, carried
// whole by braid's NVLink path under capture, or left to NCCL. `state`: the communicator's entry in
// the comm table, as the caller found it.
Handled split_or_hold(const nccl::Call& call, const std::optional<CommState>& state, cudaStream_t stream,
                      const Grouping& group, ncclResult_t* result);
// The same outside any group (calls held until their group ended): whether it ran.
bool split_now(const nccl::Call& call, cudaStream_t stream, ncclResult_t* result);

// Whether braid's routed exchange takes `operation` (ncclAlltoAll, ncclGather, ncclScatter).
bool routable(Operation operation);
// Runs `call` (routable) through braid's routed exchange (BRAID_ROUTE_EXCHANGES): false when the
// caller must give it to NCCL (off, inside a group, below BRAID_ROUTE_MIN_BYTES per flow, captured
// in a CUDA graph, or the routing keeps every flow direct), each reason said once per communicator
// (say_declined). `result` is the routed call's result.
bool try_route_exchange(const nccl::Call& call, cudaStream_t stream, ncclResult_t* result);

// Whether `stream` is being captured into a CUDA graph (or cannot be asked): braid's paths leave
// such calls to NCCL.
bool captured(cudaStream_t stream);

// Bookkeeping the argument checks need from the rest of the API: every operator NCCL made,
// whatever its type and scalar.
void remember_premulsum(ncclComm_t comm, ncclRedOp_t op, const multipath::PreMulSumSpec& spec);
void forget_premulsum(ncclComm_t comm, ncclRedOp_t op);
// The data type a live PreMulSum operator of the communicator was made for; nullopt when `op` is
// none (never made, or destroyed) or braid does not know the communicator.
std::optional<ncclDataType_t> live_premulsum_type(ncclComm_t comm, ncclRedOp_t op);
// Before NCCL aborts the communicator: stops braid's waits on every rank within a second.
void abort_braid_part(BraidPart& path);
// Destroys braid's part of a communicator, waiting at most BRAID_ABORT_TIMEOUT: its streams may
// be stuck behind a dead peer's work, so past the bound it finishes on a thread of its own.
void release_bounded(std::shared_ptr<BraidPart> path, const char* api);
// The failure braid's share met on this communicator, with its text (Success: none).
ncclResult_t braid_part_failure(ncclComm_t comm, std::string* text);

}  // namespace braid::shim
