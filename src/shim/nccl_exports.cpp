// The NCCL API as libbraid.so exports it. Large AllReduce, AllGather, ReduceScatter, Broadcast
// and Reduce calls are split across NCCL and braid's PCIe path (braid_part.h); with
// BRAID_ROUTE_EXCHANGES, large ncclAlltoAll, ncclGather and ncclScatter calls run through braid's
// routed exchange (peer/routed_path.h); every other call goes to the real NCCL's `pnccl*` entry
// point. braid records what splitting needs: the communicators (comm_table), the calling thread's group
// (group_state) and the PreMulSum operators. With BRAID_DISABLE=1 it records nothing and is a pure pass-through.
//
// Collectives and send/recv are checked as NCCL checks them before braid does anything else with
// them (arguments.h), and no C++ exception ever leaves an export (guarded()).
#include <cuda_runtime.h>
#include <cxxabi.h>

#include <cstdlib>
#include <cstring>
#include <exception>
#include <optional>
#include <span>
#include <vector>

#include "common/log.h"
#include "common/result.h"
#include "common/settings.h"
#include "shim/arguments.h"
#include "shim/comm_config.h"
#include "shim/comm_table.h"
#include "shim/group_split.h"
#include "shim/group_state.h"
#include "shim/grouped_p2p.h"
#include "shim/braid_part.h"
#include "nccl/real.h"

#define BRAID_EXPORT [[gnu::visibility("default")]]

using braid::nccl::RealNccl;
using braid::nccl::real_nccl;

static_assert(static_cast<int>(braid::Result::Success) == ncclSuccess);
static_assert(static_cast<int>(braid::Result::UnhandledCudaError) == ncclUnhandledCudaError);
static_assert(static_cast<int>(braid::Result::SystemError) == ncclSystemError);
static_assert(static_cast<int>(braid::Result::InternalError) == ncclInternalError);
static_assert(static_cast<int>(braid::Result::InvalidArgument) == ncclInvalidArgument);
static_assert(static_cast<int>(braid::Result::InvalidUsage) == ncclInvalidUsage);
static_assert(static_cast<int>(braid::Result::RemoteError) == ncclRemoteError);
static_assert(static_cast<int>(braid::Result::InProgress) == ncclInProgress);

namespace {

// Whether this thread's latest error came from braid (no real NCCL, or a missing entry point)
// rather than from NCCL: ncclGetLastError then answers with braid's text.
thread_local bool t_braid_error_latest = false;

// Records that `api` failed inside braid because of an exception; never throws itself.
void note_exception(const char* api, const char* what) noexcept {
  t_braid_error_latest = true;
  try {
    braid::fail(braid::Result::InternalError, "%s: internal error in braid: %s", api, what);
  } catch (...) {
    // Not even the text could be made (no memory): the result alone tells.
  }
}

// Runs an export's body: an exception must not cross the C ABI into the application, so it
// becomes `fallback()` (ncclInternalError, for the functions returning a result) with a last
// error naming the API and what was thrown. A thread's cancellation unwinds on.
// How deep this thread is in braid's exports. NCCL's own functions call some of its public entry
// points (ncclCommCuDevice on a non-blocking communicator asks ncclCommGetAsyncError whether it is
// ready), and with LD_PRELOAD those calls land here again, inside the export that called NCCL. Such
// nested calls go straight to NCCL: braid's logic around them would recurse without end (it did:
// ncclCommGetAsyncError -> ncclCommCuDevice -> ncclCommGetAsyncError ...) or count a group twice.
thread_local int t_export_depth = 0;
bool nested_in_braid() { return t_export_depth > 1; }

template <typename Body, typename Fallback>
auto guarded_with(const char* api, Body body, Fallback fallback) -> decltype(body()) {
  struct Depth {
    Depth() { ++t_export_depth; }
    ~Depth() { --t_export_depth; }
  } depth;
  try {
    return body();
  } catch (abi::__forced_unwind&) {
    throw;
  } catch (const std::exception& e) {
    note_exception(api, e.what());
  } catch (...) {
    note_exception(api, "an exception that is not a std::exception");
  }
  return fallback();
}

template <typename Body>
ncclResult_t guarded(const char* api, Body body) {
  return guarded_with(api, body, [] { return ncclInternalError; });
}

bool braid_enabled() {
  static const bool enabled = !braid::settings().disable;
  return enabled;
}

ncclResult_t braid_failure(const char* api, const RealNccl& real) {
  t_braid_error_latest = true;
  if (!real.found) {
    return static_cast<ncclResult_t>(
        braid::fail(braid::Result::SystemError, "%s: %s", api, real.failure.c_str()));
  }
  return static_cast<ncclResult_t>(braid::fail(braid::Result::SystemError,
                                               "%s: the real NCCL %s (version %d) has no p%s", api,
                                               real.path.c_str(), real.version, api));
}

template <typename Fn, typename... Args>
ncclResult_t forward(Fn braid::nccl::NcclCalls::*slot, const char* api, Args... args) {
  const RealNccl& real = real_nccl();
  Fn fn = real.found ? real.*slot : nullptr;
  if (fn == nullptr) return braid_failure(api, real);
  t_braid_error_latest = false;
  return fn(args...);
}

#define BRAID_FORWARD(api, ...) forward(&RealNccl::api, #api __VA_OPT__(, ) __VA_ARGS__)

bool accepted(ncclResult_t result) { return result == ncclSuccess || result == ncclInProgress; }

// Fills what NCCL can already tell about `comm` into `state`; a non-blocking communicator
// still initialising answers later (see ncclCommGetAsyncError). Never asked inside the group that
// makes `comm`: NCCL initialises it at the group's end and answers 0 for its device before that.
braid::shim::CommState query_state(ncclComm_t comm, braid::shim::CommState state) {
  const RealNccl& real = real_nccl();
  int value = -1;
  if (state.rank < 0 && real.ncclCommUserRank && real.ncclCommUserRank(comm, &value) == ncclSuccess) {
    state.rank = value;
  }
  if (state.nranks < 0 && real.ncclCommCount && real.ncclCommCount(comm, &value) == ncclSuccess) {
    state.nranks = value;
  }
  if (state.cuda_device < 0 && real.ncclCommCuDevice &&
      real.ncclCommCuDevice(comm, &value) == ncclSuccess) {
    state.cuda_device = value;
  }
  return state;
}

// Communicators this thread made inside its open group, learnt at the group's outermost end.
std::vector<ncclComm_t>& made_in_this_group() {
  thread_local std::vector<ncclComm_t> made;
  return made;
}

void log_known(ncclComm_t comm, const braid::shim::CommState& state) {
  if (state.complete())
    BRAID_INFO(Shim, "communicator %p: rank %d of %d on GPU %d", static_cast<void*>(comm), state.rank, state.nranks,
               state.cuda_device);
}

void learn_made_in_group(bool group_succeeded) {
  auto& made = made_in_this_group();
  if (group_succeeded) {
    for (ncclComm_t comm : made) {
      auto state = braid::shim::comm_table().find(comm);
      if (!state || state->complete() || !state->blocking) continue;
      if (auto learnt = braid::shim::comm_table().complete_from(comm, query_state(comm, *state))) {
        log_known(comm, *learnt);
        braid::shim::open_board(comm, *learnt);
      }
    }
  }
  made.clear();
}

// The device NCCL gives a communicator made by ncclCommInitRank*: the caller's current one.
int current_device() {
  int device = -1;
  if (cudaGetDevice(&device) != cudaSuccess) {
    cudaGetLastError();
    return -1;
  }
  return device;
}

// The GPU braid recorded for `parent`, which a split or shrink of it shares; -1 when unknown.
int device_of(ncclComm_t parent) {
  const auto known = braid::shim::comm_table().find(parent);
  return known ? known->cuda_device : -1;
}

// What NCCL made a communicator from: the call's config (null: none) and, for a split or shrink,
// the parent, whose config NCCL copies where the call passed none.
struct MadeWith {
  const ncclConfig_t* config = nullptr;
  ncclComm_t parent = nullptr;
};

// After NCCL created `comm` (result Success, or InProgress for a non-blocking one) on `device`
// (-1: NCCL tells).
// `identity`: bytes every rank of the communicator holds alike, which name its exchange board
// (grouped_p2p.h), opened once the communicator's rank, size and GPU are known.
void remember(ncclResult_t result, ncclComm_t comm, int rank, int nranks, MadeWith made_with, int device,
              std::span<const unsigned char> identity = {}) {
  if (!braid_enabled() || !accepted(result) || comm == nullptr) return;
  braid::shim::CommState state;
  state.rank = rank;
  state.nranks = nranks;
  const std::optional<braid::shim::CommState> parent =
      made_with.parent != nullptr ? braid::shim::comm_table().find(made_with.parent) : std::nullopt;
  const braid::shim::CommState* known_parent = parent ? &*parent : nullptr;
  state.blocking = braid::shim::made_blocking(made_with.config, known_parent, std::getenv("NCCL_COMM_BLOCKING"));
  state.cuda_device = device;
  if (braid::shim::this_thread_group().in_group()) {
    made_in_this_group().push_back(comm);
  } else if (result == ncclSuccess) {
    state = query_state(comm, state);
  }
  state.braid_part = std::make_shared<braid::shim::BraidPart>();
  braid::shim::name_board(state, identity);
  braid::shim::comm_table().insert(comm, state);
  log_known(comm, state);
  braid::shim::open_board(comm, state);
}

std::span<const unsigned char> id_bytes(const ncclUniqueId* ids, int count) {
  if (ids == nullptr || count <= 0) return {};
  return {reinterpret_cast<const unsigned char*>(ids), sizeof(ncclUniqueId) * static_cast<size_t>(count)};
}

// braid's part of a communicator the application destroys or aborts, taken out of the table
// before NCCL frees the handle (once freed, another thread's init may get the same address).
// Its waits are stopped first when aborting, or when it failed (its peers may be gone).
std::shared_ptr<braid::shim::BraidPart> detach(ncclComm_t comm, bool abort) {
  if (!braid_enabled() || comm == nullptr) return nullptr;
  auto state = braid::shim::comm_table().take(comm);
  if (!state || !state->braid_part) return nullptr;
  if (abort || state->braid_part->failure.load() != ncclSuccess) braid::shim::abort_braid_part(*state->braid_part);
  return std::move(state->braid_part);
}

// ncclCommDestroy and ncclCommAbort: braid's state goes after NCCL's, since NCCL's abort ends its
// kernels, which braid's streams may be queued behind; braid's own shutdown is then bounded
// (BRAID_ABORT_TIMEOUT).
template <typename ToNccl>
ncclResult_t close_comm(ncclComm_t comm, bool abort, const char* api, ToNccl to_nccl) {
  auto braid_part = detach(comm, abort);
  const ncclResult_t result = to_nccl();
  braid::shim::release_bounded(std::move(braid_part), api);
  return result;
}

// A group that gets an operation braid does not hold back goes to NCCL alone: the calls held so
// far go to NCCL first, inside the group and in their order (group_split.h, grouped_p2p.h).
ncclResult_t release_held_calls() {
  auto& group = braid::shim::this_thread_group();
  if (!group.deferring()) return ncclSuccess;
  group.stop_deferring();
  const ncclResult_t collectives = braid::shim::hand_held_to_nccl(braid::shim::this_thread_held());
  const ncclResult_t p2p = braid::shim::hand_held_p2p_to_nccl(braid::shim::this_thread_held_p2p());
  return collectives != ncclSuccess ? collectives : p2p;
}

// An operation braid hands to NCCL alone (collective: not send/recv), through `to_nccl`.
template <typename ToNccl>
ncclResult_t operation(bool collective, ToNccl to_nccl) {
  if (!braid_enabled()) return to_nccl();
  const ncclResult_t released = release_held_calls();
  if (released != ncclSuccess) return released;
  const ncclResult_t result = to_nccl();
  if (accepted(result)) braid::shim::this_thread_group().on_operation(collective);
  return result;
}

// A collective braid may split, braid on: split it (or, inside a group, hold it to split at the
// group's end), or hand it to NCCL alone through `to_nccl`, which must capture by value.
template <typename ToNccl>
ncclResult_t split_or_forward(const braid::nccl::Call& call, const std::optional<braid::shim::CommState>& state,
                              cudaStream_t stream, ToNccl to_nccl) {
  auto& group = braid::shim::this_thread_group();
  const braid::shim::Grouping grouping{group.in_group(),
                                       group.deferring() && braid::shim::this_thread_held_p2p().empty()};
  ncclResult_t result = ncclSuccess;
  switch (braid::shim::split_or_hold(call, state, stream, grouping, &result)) {
    case braid::shim::Handled::Held:
      braid::shim::this_thread_held().push_back({call.comm, call, stream, to_nccl});
      group.on_operation(true);
      return ncclSuccess;
    case braid::shim::Handled::Ran:
      t_braid_error_latest = result != ncclSuccess;
      return result;
    case braid::shim::Handled::Nccl:
      break;
  }
  return operation(true, to_nccl);
}

using braid::nccl::Call;
using braid::nccl::Operation;

// NCCL's refusal of the call (arguments.h), given before braid splits, holds or forwards it.
// Inside a group the refused call still goes to NCCL: NCCL's group records the error, so its
// ncclGroupEnd fails and launches nothing, as without braid.
template <typename ToNccl>
std::optional<ncclResult_t> refuse(const Call& call, const std::optional<braid::shim::CommState>& state, ToNccl to_nccl) {
  const std::optional<braid::shim::ArgumentError> refused = braid::shim::refusal(call, state);
  if (!refused) return std::nullopt;
  if (braid::shim::this_thread_group().in_group()) (void)to_nccl();
  t_braid_error_latest = true;
  return static_cast<ncclResult_t>(
      braid::fail(static_cast<braid::Result>(refused->result), "%s", refused->text.c_str()));
}

// Every collective and send/recv: checked, then split (or held to split at its group's end) or
// handed to NCCL alone through `to_nccl`, which must capture by value.
template <typename ToNccl>
ncclResult_t issue(const Call& call, cudaStream_t stream, ToNccl to_nccl) {
  if (nested_in_braid()) return to_nccl();
  const bool point_to_point = call.operation == Operation::Send || call.operation == Operation::Recv;
  if (!braid_enabled() || !real_nccl().found) return operation(!point_to_point, to_nccl);
  // The communicator's entry, looked up once for the checks and the split.
  const std::optional<braid::shim::CommState> state =
      call.comm != nullptr ? braid::shim::comm_table().find(call.comm) : std::nullopt;
  if (const std::optional<ncclResult_t> refused = refuse(call, state, to_nccl)) return *refused;
  if (braid::shim::routable(call.operation)) {
    ncclResult_t result = ncclSuccess;
    if (braid::shim::try_route_exchange(call, stream, &result)) {
      t_braid_error_latest = result != ncclSuccess;
      return result;
    }
  }
  if (braid::multipath::splittable(call.collective())) return split_or_forward(call, state, stream, to_nccl);
  if (point_to_point) {
    // Held for the group's end (routed there, or given to NCCL by every rank alike), or to NCCL now,
    // which this rank's next slot on the board must learn before the call reaches NCCL.
    const braid::route::PeerCall peer_call{
        call.operation == Operation::Send ? braid::route::PeerCall::Send : braid::route::PeerCall::Recv, call.root,
        call.recv,
        braid::datatype_valid(static_cast<int>(call.type))
            ? call.count * braid::datatype_size(static_cast<braid::DataType>(call.type))
            : 0};
    if (braid::shim::hold_p2p(call.comm, peer_call, stream, to_nccl)) {
      braid::shim::this_thread_group().on_operation(false);
      return ncclSuccess;
    }
    const ncclResult_t released = release_held_calls();
    if (released != ncclSuccess) return released;
    braid::shim::bypass_board(call.comm);
  }
  return operation(!point_to_point, to_nccl);
}

}  // namespace

extern "C" {

// ---- versions, ids, errors ----

BRAID_EXPORT ncclResult_t ncclGetVersion(int* version) {
  return guarded(__func__, [&] { return BRAID_FORWARD(ncclGetVersion, version); });
}

BRAID_EXPORT ncclResult_t ncclGetUniqueId(ncclUniqueId* uniqueId) {
  return guarded(__func__, [&] { return BRAID_FORWARD(ncclGetUniqueId, uniqueId); });
}

BRAID_EXPORT const char* ncclGetErrorString(ncclResult_t result) {
  const auto braids_text = [result] { return braid::result_string(static_cast<braid::Result>(result)); };
  return guarded_with(
      __func__,
      [&] {
        const RealNccl& real = real_nccl();
        if (real.found && real.ncclGetErrorString) return real.ncclGetErrorString(result);
        return braids_text();
      },
      braids_text);
}

BRAID_EXPORT const char* ncclGetLastError(ncclComm_t comm) {
  return guarded_with(
      __func__,
      [&] {
        const RealNccl& real = real_nccl();
        if (t_braid_error_latest || !real.found || real.ncclGetLastError == nullptr) return braid::last_error();
        return real.ncclGetLastError(comm);
      },
      [] { return braid::last_error(); });
}

BRAID_EXPORT void ncclResetDebugInit() {
  guarded_with(
      __func__,
      [] {
        const RealNccl& real = real_nccl();
        if (real.found && real.ncclResetDebugInit) real.ncclResetDebugInit();
      },
      [] {});
}

// ---- memory ----

BRAID_EXPORT ncclResult_t ncclMemAlloc(void** ptr, size_t size) {
  return guarded(__func__, [&] { return BRAID_FORWARD(ncclMemAlloc, ptr, size); });
}

BRAID_EXPORT ncclResult_t ncclMemFree(void* ptr) {
  return guarded(__func__, [&] { return BRAID_FORWARD(ncclMemFree, ptr); });
}

BRAID_EXPORT ncclResult_t ncclCommRegister(const ncclComm_t comm, void* buff, size_t size, void** handle) {
  return guarded(__func__, [&] { return BRAID_FORWARD(ncclCommRegister, comm, buff, size, handle); });
}

BRAID_EXPORT ncclResult_t ncclCommDeregister(const ncclComm_t comm, void* handle) {
  return guarded(__func__, [&] { return BRAID_FORWARD(ncclCommDeregister, comm, handle); });
}

BRAID_EXPORT ncclResult_t ncclCommWindowRegister(ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win,
                                                 int winFlags) {
  return guarded(__func__, [&] { return BRAID_FORWARD(ncclCommWindowRegister, comm, buff, size, win, winFlags); });
}

BRAID_EXPORT ncclResult_t ncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win) {
  return guarded(__func__, [&] { return BRAID_FORWARD(ncclCommWindowDeregister, comm, win); });
}

BRAID_EXPORT ncclResult_t ncclDevCommCreate(ncclComm_t comm, const ncclDevCommRequirements* reqs,
                                            ncclDevComm* outDevComm) {
  return guarded(__func__, [&] { return BRAID_FORWARD(ncclDevCommCreate, comm, reqs, outDevComm); });
}

BRAID_EXPORT ncclResult_t ncclDevCommDestroy(ncclComm_t comm, const ncclDevComm* devComm) {
  return guarded(__func__, [&] { return BRAID_FORWARD(ncclDevCommDestroy, comm, devComm); });
}

// ---- communicator lifecycle ----

BRAID_EXPORT ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank) {
  return guarded(__func__, [&] {
    const int device = current_device();
    const ncclResult_t result = BRAID_FORWARD(ncclCommInitRank, comm, nranks, commId, rank);
    if (comm != nullptr) remember(result, *comm, rank, nranks, MadeWith{}, device, id_bytes(&commId, 1));
    return result;
  });
}

BRAID_EXPORT ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank,
                                                 ncclConfig_t* config) {
  return guarded(__func__, [&] {
    const int device = current_device();
    const ncclResult_t result = BRAID_FORWARD(ncclCommInitRankConfig, comm, nranks, commId, rank, config);
    if (comm != nullptr)
      remember(result, *comm, rank, nranks, MadeWith{config}, device, id_bytes(&commId, 1));
    return result;
  });
}

BRAID_EXPORT ncclResult_t ncclCommInitRankScalable(ncclComm_t* newcomm, int nranks, int myrank, int nId,
                                                   ncclUniqueId* commIds, ncclConfig_t* config) {
  return guarded(__func__, [&] {
    const int device = current_device();
    const ncclResult_t result =
        BRAID_FORWARD(ncclCommInitRankScalable, newcomm, nranks, myrank, nId, commIds, config);
    if (newcomm != nullptr)
      remember(result, *newcomm, myrank, nranks, MadeWith{config}, device, id_bytes(commIds, nId));
    return result;
  });
}

BRAID_EXPORT ncclResult_t ncclCommInitAll(ncclComm_t* comm, int ndev, const int* devlist) {
  return guarded(__func__, [&] {
    const ncclResult_t result = BRAID_FORWARD(ncclCommInitAll, comm, ndev, devlist);
    if (comm != nullptr && result == ncclSuccess) {
      // One process holds every rank: any id of its own names their board.
      const braid::engine::CommId id = braid::engine::CommId::random();
      for (int i = 0; i < ndev; ++i)
        remember(result, comm[i], i, ndev, MadeWith{}, devlist != nullptr ? devlist[i] : i, id.bytes);
    }
    return result;
  });
}

BRAID_EXPORT ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
                                        ncclConfig_t* config) {
  return guarded(__func__, [&] {
    // The child's board is named from the parent's id, how many splits the parent made and the color.
    const std::vector<unsigned char> identity =
        braid_enabled() ? braid::shim::split_identity(comm, color) : std::vector<unsigned char>{};
    const ncclResult_t result = BRAID_FORWARD(ncclCommSplit, comm, color, key, newcomm, config);
    // A rank that passed NCCL_SPLIT_NOCOLOR gets a null communicator: nothing to remember.
    if (newcomm != nullptr) remember(result, *newcomm, -1, -1, MadeWith{config, comm}, device_of(comm), identity);
    return result;
  });
}

BRAID_EXPORT ncclResult_t ncclCommShrink(ncclComm_t comm, int* excludeRanksList, int excludeRanksCount,
                                         ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags) {
  return guarded(__func__, [&] {
    const ncclResult_t result =
        BRAID_FORWARD(ncclCommShrink, comm, excludeRanksList, excludeRanksCount, newcomm, config, shrinkFlags);
    if (newcomm != nullptr) remember(result, *newcomm, -1, -1, MadeWith{config, comm}, device_of(comm));
    return result;
  });
}

BRAID_EXPORT ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  return guarded(__func__, [&] { return BRAID_FORWARD(ncclCommFinalize, comm); });
}

BRAID_EXPORT ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  return guarded(__func__, [&] {
    return close_comm(comm, false, "ncclCommDestroy", [&] { return BRAID_FORWARD(ncclCommDestroy, comm); });
  });
}

BRAID_EXPORT ncclResult_t ncclCommAbort(ncclComm_t comm) {
  return guarded(__func__, [&] {
    return close_comm(comm, true, "ncclCommAbort", [&] { return BRAID_FORWARD(ncclCommAbort, comm); });
  });
}

BRAID_EXPORT ncclResult_t ncclCommRevoke(ncclComm_t comm, int revokeFlags) {
  return guarded(__func__, [&] {
    const ncclResult_t result = BRAID_FORWARD(ncclCommRevoke, comm, revokeFlags);
    // NCCL refuses every later collective on it (arguments.h); braid must split none.
    if (braid_enabled() && accepted(result) && comm != nullptr) braid::shim::comm_table().mark_revoked(comm);
    return result;
  });
}

// ---- queries ----

BRAID_EXPORT ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError) {
  return guarded(__func__, [&] {
    const ncclResult_t result = BRAID_FORWARD(ncclCommGetAsyncError, comm, asyncError);
    if (nested_in_braid()) return result;
    if (braid_enabled() && result == ncclSuccess && asyncError != nullptr && *asyncError == ncclSuccess) {
      // NCCL's own error first; else braid's share's, which NCCL cannot know of.
      std::string text;
      const ncclResult_t failure = braid::shim::braid_part_failure(comm, &text);
      if (failure != ncclSuccess) {
        braid::fail(static_cast<braid::Result>(failure), "%s", text.c_str());
        t_braid_error_latest = true;
        *asyncError = failure;
        return result;
      }
      // A non-blocking communicator has finished initialising: learn what was unknown.
      if (auto state = braid::shim::comm_table().find(comm); state && !state->complete()) {
        if (auto learnt = braid::shim::comm_table().complete_from(comm, query_state(comm, *state))) log_known(comm, *learnt);
      }
    }
    return result;
  });
}

BRAID_EXPORT ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
  return guarded(__func__, [&] { return BRAID_FORWARD(ncclCommCount, comm, count); });
}

BRAID_EXPORT ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* device) {
  return guarded(__func__, [&] { return BRAID_FORWARD(ncclCommCuDevice, comm, device); });
}

BRAID_EXPORT ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
  return guarded(__func__, [&] { return BRAID_FORWARD(ncclCommUserRank, comm, rank); });
}

// ---- reduction operators ----

BRAID_EXPORT ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
                                                   ncclScalarResidence_t residence, ncclComm_t comm) {
  return guarded(__func__, [&] {
    const ncclResult_t result = BRAID_FORWARD(ncclRedOpCreatePreMulSum, op, scalar, datatype, residence, comm);
    if (braid_enabled() && result == ncclSuccess && op != nullptr) {
      // Every operator NCCL made is remembered: the argument checks must know which values are live,
      // whatever type or scalar NCCL accepted; braid remakes on its side only those it can
      // (braid_part.h), when it first splits a call that uses one.
      braid::multipath::PreMulSumSpec spec;
      spec.type = datatype;
      spec.residence = residence;
      if (residence != ncclScalarHostImmediate)
        spec.device_pointer = scalar;
      else if (scalar != nullptr && braid::datatype_valid(static_cast<int>(datatype)))
        std::memcpy(spec.host_value, scalar, braid::datatype_size(static_cast<braid::DataType>(datatype)));
      braid::shim::remember_premulsum(comm, *op, spec);
    }
    return result;
  });
}

BRAID_EXPORT ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm) {
  return guarded(__func__, [&] {
    // Before NCCL frees the value: once freed, another thread's create may get it again.
    if (braid_enabled()) braid::shim::forget_premulsum(comm, op);
    return BRAID_FORWARD(ncclRedOpDestroy, op, comm);
  });
}

// ---- collectives: the five braid splits, then those that go to NCCL alone ----

BRAID_EXPORT ncclResult_t ncclReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                     ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
  return guarded(__func__, [&] {
    return issue({Operation::Reduce, sendbuff, recvbuff, count, datatype, op, root, comm}, stream, [=] {
      return BRAID_FORWARD(ncclReduce, sendbuff, recvbuff, count, datatype, op, root, comm, stream);
    });
  });
}

BRAID_EXPORT ncclResult_t ncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                                    cudaStream_t stream) {
  // NCCL's ncclBcast is its ncclBroadcast in place, and checks (and names) itself as Broadcast.
  return guarded(__func__, [&] {
    return issue({Operation::Broadcast, buff, buff, count, datatype, ncclSum, root, comm}, stream,
                 [=] { return BRAID_FORWARD(ncclBcast, buff, count, datatype, root, comm, stream); });
  });
}

BRAID_EXPORT ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                        int root, ncclComm_t comm, cudaStream_t stream) {
  return guarded(__func__, [&] {
    return issue({Operation::Broadcast, sendbuff, recvbuff, count, datatype, ncclSum, root, comm}, stream, [=] {
      return BRAID_FORWARD(ncclBroadcast, sendbuff, recvbuff, count, datatype, root, comm, stream);
    });
  });
}

BRAID_EXPORT ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                                        ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                        cudaStream_t stream) {
  return guarded(__func__, [&] {
    return issue({Operation::AllReduce, sendbuff, recvbuff, count, datatype, op, 0, comm}, stream, [=] {
      return BRAID_FORWARD(ncclAllReduce, sendbuff, recvbuff, count, datatype, op, comm, stream);
    });
  });
}

BRAID_EXPORT ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                            ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                            cudaStream_t stream) {
  return guarded(__func__, [&] {
    return issue({Operation::ReduceScatter, sendbuff, recvbuff, recvcount, datatype, op, 0, comm}, stream, [=] {
      return BRAID_FORWARD(ncclReduceScatter, sendbuff, recvbuff, recvcount, datatype, op, comm, stream);
    });
  });
}

BRAID_EXPORT ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                                        ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  return guarded(__func__, [&] {
    return issue({Operation::AllGather, sendbuff, recvbuff, sendcount, datatype, ncclSum, 0, comm}, stream, [=] {
      return BRAID_FORWARD(ncclAllGather, sendbuff, recvbuff, sendcount, datatype, comm, stream);
    });
  });
}

BRAID_EXPORT ncclResult_t ncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                       ncclComm_t comm, cudaStream_t stream) {
  return guarded(__func__, [&] {
    return issue({Operation::AlltoAll, sendbuff, recvbuff, count, datatype, ncclSum, 0, comm}, stream,
                 [=] { return BRAID_FORWARD(ncclAlltoAll, sendbuff, recvbuff, count, datatype, comm, stream); });
  });
}

BRAID_EXPORT ncclResult_t ncclGather(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                     int root, ncclComm_t comm, cudaStream_t stream) {
  return guarded(__func__, [&] {
    return issue({Operation::Gather, sendbuff, recvbuff, count, datatype, ncclSum, root, comm}, stream, [=] {
      return BRAID_FORWARD(ncclGather, sendbuff, recvbuff, count, datatype, root, comm, stream);
    });
  });
}

BRAID_EXPORT ncclResult_t ncclScatter(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                      int root, ncclComm_t comm, cudaStream_t stream) {
  return guarded(__func__, [&] {
    return issue({Operation::Scatter, sendbuff, recvbuff, count, datatype, ncclSum, root, comm}, stream, [=] {
      return BRAID_FORWARD(ncclScatter, sendbuff, recvbuff, count, datatype, root, comm, stream);
    });
  });
}

BRAID_EXPORT ncclResult_t ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
                                   ncclComm_t comm, cudaStream_t stream) {
  // NCCL records a send's buffer as its receive buffer, and the peer as its root.
  return guarded(__func__, [&] {
    return issue({Operation::Send, nullptr, const_cast<void*>(sendbuff), count, datatype, ncclSum, peer, comm}, stream,
                 [=] { return BRAID_FORWARD(ncclSend, sendbuff, count, datatype, peer, comm, stream); });
  });
}

BRAID_EXPORT ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
                                   ncclComm_t comm, cudaStream_t stream) {
  return guarded(__func__, [&] {
    return issue({Operation::Recv, nullptr, recvbuff, count, datatype, ncclSum, peer, comm}, stream,
                 [=] { return BRAID_FORWARD(ncclRecv, recvbuff, count, datatype, peer, comm, stream); });
  });
}

// ---- groups: NCCL keeps its own semantics; braid mirrors the per-thread depth ----

BRAID_EXPORT ncclResult_t ncclGroupStart() {
  return guarded(__func__, [] {
    const ncclResult_t result = BRAID_FORWARD(ncclGroupStart);
    if (braid_enabled() && result == ncclSuccess && !nested_in_braid()) braid::shim::this_thread_group().on_start();
    return result;
  });
}

BRAID_EXPORT ncclResult_t ncclGroupEnd() {
  return guarded(__func__, [] {
    if (nested_in_braid()) return BRAID_FORWARD(ncclGroupEnd);
    const RealNccl& real = real_nccl();
    const bool reaches_nccl = real.found && real.ncclGroupEnd != nullptr;
    auto& group = braid::shim::this_thread_group();
    // The outermost end of a group that held its collectives back: NCCL's group is empty of them.
    std::vector<braid::shim::HeldCollective> held;
    std::vector<braid::shim::HeldPeerCall> held_p2p;
    if (braid_enabled() && reaches_nccl && group.depth() == 1) {
      held.swap(braid::shim::this_thread_held());
      held_p2p.swap(braid::shim::this_thread_held_p2p());
    }
    const ncclResult_t result = BRAID_FORWARD(ncclGroupEnd);
    // NCCL leaves the group whatever the outcome, as long as the call reached it.
    if (braid_enabled() && reaches_nccl && group.on_end()) learn_made_in_group(accepted(result));
    if (!held_p2p.empty()) {
      // NCCL's group failed (a call in it was refused): it ran nothing, and neither does braid.
      if (result != ncclSuccess) {
        braid::shim::drop_held_p2p(held_p2p);
        return result;
      }
      bool braid_error = false;
      const ncclResult_t ran = braid::shim::run_held_p2p(std::move(held_p2p), &braid_error);
      t_braid_error_latest = braid_error;
      return ran;
    }
    if (held.empty()) return result;
    if (result != ncclSuccess) {
      BRAID_WARN(Shim, "ncclGroupEnd failed (%s); the group's %zu collectives held for splitting were not run",
                 real.ncclGetErrorString ? real.ncclGetErrorString(result) : "?", held.size());
      return result;
    }
    const ncclResult_t split = braid::shim::split_held(std::move(held));
    t_braid_error_latest = split != ncclSuccess;
    return split;
  });
}

BRAID_EXPORT ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t* simInfo) {
  return guarded(__func__, [&] {
    // NCCL estimates the group it holds: calls braid held back go to it first (the group is then
    // NCCL's alone).
    if (braid_enabled()) {
      const ncclResult_t released = release_held_calls();
      if (released != ncclSuccess) return released;
    }
    return BRAID_FORWARD(ncclGroupSimulateEnd, simInfo);
  });
}

}  // extern "C"
