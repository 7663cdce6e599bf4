#include "shim/braid_part.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <future>
#include <mutex>
#include <system_error>
#include <thread>
#include <optional>

#include "api/nccl_calls.h"
#include "common/log.h"
#include "common/result.h"
#include "common/settings.h"
#include "common/sizes.h"
#include "multipath/paths_admitted.h"
#include "route/grouped_exchange.h"
#include "shim/comm_table.h"
#include "shim/group_state.h"
#include "shim/real_nccl.h"
#include "shim/staged_call.h"

namespace braid::shim {

namespace {

// Every rank learns every rank's words, combined by the maximum, through NCCL on a private
// stream: NCCL's error where that failed.
template <size_t N>
Result ranks_maximum(ncclComm_t comm, const RealNccl& real, int device, const char* what, std::array<int32_t, N>* words) {
  int previous = 0;
  cudaGetDevice(&previous);
  cudaSetDevice(device);
  const Result r = api::host_round_trip(words->data(), sizeof *words, real, what, [&](void* buffer, cudaStream_t stream) {
    return real.ncclAllReduce(buffer, buffer, N, ncclInt32, ncclMax, comm, stream);
  });
  if (r != Result::Success) BRAID_WARN(Shim, "multipath: %s", last_error());
  cudaGetLastError();
  cudaSetDevice(previous);
  return r;
}

// Every rank learns whether every rank made its PCIe path (a rank that splits while another does
// not would hang NCCL).
bool all_ranks_ready(ncclComm_t comm, const RealNccl& real, int device, bool mine) {
  std::array<int32_t, 1> refused{mine ? 0 : 1};
  return ranks_maximum(comm, real, device, "the PCIe paths' readiness (ncclAllReduce max)", &refused) == Result::Success &&
         refused[0] == 0;
}

// Whether this machine's GPUs are joined by NVLink (braid's topology, discovered once a process).
bool machine_has_nvlink() {
  topo::Topology machine;
  bool nvlink = false;
  if (api::machine_topology(&machine) == Result::Success)
    for (const auto& link : machine.links) nvlink |= link.kind == topo::LinkKind::NvLink;
  return nvlink;
}

// The sizes from which each of braid's paths takes a call (the orchestrator's own rules).
multipath::PathThresholds path_thresholds(bool nvlink) {
  const int64_t split_min = settings().split_min_bytes;
  const size_t pcie = split_min > 0 ? static_cast<size_t>(split_min)
                                    : nvlink ? size_t{128} << 20 : size_t{1} << 20;
  return {.pcie_share = pcie,
          .copy_engines_gather = byte_threshold(settings().nvlink_copy_min_bytes),
          .copy_engines_reduce = byte_threshold(settings().nvlink_allreduce_min_bytes)};
}

// What this rank's process allows braid to use on the communicator (multipath/paths_admitted.h).
multipath::PathsAdmitted paths_this_rank_admits(const CommState& state, bool nvlink) {
  return multipath::admit_paths(multipath::PathFacts{.nranks = state.nranks,
                                                     .nvlink = nvlink,
                                                     .nvlink_path = settings().nvlink_path,
                                                     .split_size_chosen = settings().split_min_bytes > 0});
}

// The paths every rank admits, and whether every rank can take this call at all (`mine`): one
// agreement through NCCL, at the first call worth splitting, with the sizes each path takes calls
// from. NCCL's error where it failed.
Result agree_paths(ncclComm_t comm, const CommState& state, bool mine, multipath::PathsAdmitted* agreed,
                   multipath::PathThresholds* thresholds, bool* everyone) {
  const bool nvlink = machine_has_nvlink();  // the machine's topology, read once here
  *thresholds = path_thresholds(nvlink);
  const std::array<int32_t, 2> paths = multipath::encode(paths_this_rank_admits(state, nvlink));
  std::array<int32_t, 3> words{mine ? 0 : 1, paths[0], paths[1]};
  BRAID_TRY(ranks_maximum(comm, real_nccl(), state.cuda_device,
                          "the ranks' agreement on braid's paths (ncclAllReduce max)", &words));
  *everyone = words[0] == 0;
  *agreed = multipath::decode({words[1], words[2]});
  return Result::Success;
}

void make_orchestrator(ncclComm_t comm, const CommState& state, BraidPart& path, const multipath::PathsAdmitted& paths) {
  path.attempted = true;
  const RealNccl& real = real_nccl();
  std::unique_ptr<multipath::Orchestrator> made;
  const Result r = multipath::Orchestrator::create(comm, real, &made, &paths);
  if (r != Result::Success)
    BRAID_WARN(Shim, "multipath: braid's PCIe path could not start on GPU %d (%s); this communicator's "
               "collectives go to NCCL alone", state.cuda_device, last_error());
  if (!all_ranks_ready(comm, real, state.cuda_device, r == Result::Success)) {
    if (r == Result::Success)
      BRAID_WARN(Shim, "multipath: another rank's PCIe path could not start; this communicator's "
                 "collectives go to NCCL alone");
    return;
  }
  path.orchestrator = std::move(made);
  path.live.store(path.orchestrator.get());
}

}  // namespace

// A graph replay cannot reproduce braid's host-driven share: captured calls go to NCCL alone.
bool captured(cudaStream_t stream) {
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream, &capture) != cudaSuccess) {
    cudaGetLastError();
    return true;  // a stream CUDA cannot describe is not one to fork from
  }
  if (capture == cudaStreamCaptureStatusNone) return false;
  static std::once_flag logged;
  std::call_once(logged, [] { BRAID_INFO(Shim, "multipath: collectives captured in a CUDA graph go to NCCL alone"); });
  return true;
}

namespace {

// The communicator's state when braid could split on it at all; null otherwise. The shim checked
// the call's arguments before (arguments.h); the type and size are checked again because braid
// counts the call's bytes with them.
std::optional<CommState> splitting_state(ncclComm_t comm, const multipath::SplitCall& call) {
  if (!multipath::splittable(call.collective) || !datatype_valid(static_cast<int>(call.type))) return std::nullopt;
  auto state = comm_table().find(comm);
  if (!state || !state->braid_part || !state->complete() || state->nranks < 2 || !state->blocking ||
      state->revoked || !multipath::message_bytes_fit(call, state->nranks))
    return std::nullopt;
  return state;
}

// What braid's path can do with a call's buffers at this rank.
enum class BufferFit { Usable, Staged, Unusable };

// One buffer, one query of CUDA. Usable: what NCCL's CudaPtrCheck accepts (src/misc/argcheck.cc,
// 2.28.9) and braid's path can use (api/collectives.cpp), device memory of the communicator's GPU
// or managed memory. Staged: other memory mapped for devices (pinned host memory, another GPU's),
// which NCCL runs on and braid copies (staged_call.h). Unusable: what CUDA does not map for devices.
BufferFit buffer_fit(const void* buffer, int device) {
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, buffer) != cudaSuccess) {
    cudaGetLastError();
    return BufferFit::Unusable;
  }
  if (attributes.devicePointer == nullptr) return BufferFit::Unusable;
  const bool usable = attributes.type == cudaMemoryTypeManaged ||
                      (attributes.type == cudaMemoryTypeDevice && attributes.device == device);
  return usable ? BufferFit::Usable : BufferFit::Staged;
}

// Only the buffers the call uses at this rank must fit (multipath::buffers_used); braid's path
// checks every buffer it is given that is not null.
BufferFit buffers_fit(const multipath::SplitCall& call, const CommState& state, BraidPart& path) {
  const multipath::BuffersUsed uses = multipath::buffers_used(call, state.rank);
  const auto fit = [&](const void* buffer, bool used) {
    if (buffer == nullptr) return used ? BufferFit::Unusable : BufferFit::Usable;
    const void*& known = path.usable_buffers[(reinterpret_cast<uintptr_t>(buffer) >> 8) % path.usable_buffers.size()];
    if (known == buffer) return BufferFit::Usable;
    const BufferFit found = buffer_fit(buffer, state.cuda_device);
    if (found == BufferFit::Usable) known = buffer;
    return found;
  };
  const BufferFit send = fit(call.send, uses.send);
  const BufferFit recv = fit(call.recv, uses.recv);
  if (send == BufferFit::Unusable || recv == BufferFit::Unusable) return BufferFit::Unusable;
  return send == BufferFit::Staged || recv == BufferFit::Staged ? BufferFit::Staged : BufferFit::Usable;
}

// taskAppend refuses FP8 reductions below sm90 (NCCL asks the communicator's oldest GPU; braid
// knows its own, the same on the machines it targets).
bool fp8_reduction_supported(const multipath::SplitCall& call, const CommState& state, BraidPart& path) {
  const bool fp8 = call.type == ncclFloat8e4m3 || call.type == ncclFloat8e5m2;
  if (!fp8 || !collective_reduces(call.collective)) return true;
  if (path.compute_major < 0) {
    int major = 0;
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, state.cuda_device) != cudaSuccess) {
      cudaGetLastError();
      return false;
    }
    path.compute_major = major;
  }
  return path.compute_major >= 9;
}

// What NCCL checks of a call on the GPU or in its state of the communicator, and what braid's
// path needs of the buffers, asked (with `path` locked) before braid splits a call or holds it to
// split it later, and before the exchange that makes the path. A call failing it goes to NCCL
// alone, which refuses it (NCCL_CHECK_POINTERS=1, FP8 below sm90, an asynchronous error of the
// communicator) or runs it, exactly as without braid; Staged: its buffers must be staged.
BufferFit gpu_allows_split(ncclComm_t comm, const multipath::SplitCall& call, const CommState& state, BraidPart& path) {
  const RealNccl& real = real_nccl();
  ncclResult_t async = ncclSuccess;
  // ncclInProgress is no error (NCCL may still be connecting); a rank that read it as one would
  // decline alone.
  if (real.ncclCommGetAsyncError == nullptr || real.ncclCommGetAsyncError(comm, &async) != ncclSuccess ||
      (async != ncclSuccess && async != ncclInProgress))
    return BufferFit::Unusable;
  if (!fp8_reduction_supported(call, state, path)) return BufferFit::Unusable;
  return buffers_fit(call, state, path);
}

// The split call on staged buffers (staged_call.h): a rank whose buffers braid's path cannot take
// still splits as its peers do. Not under capture: there such calls go to NCCL as before.
ncclResult_t run_staged(const multipath::SplitCall& call, const CommState& state, BraidPart& path, cudaStream_t stream,
                        multipath::CallerProfile::Clock::time_point entered) {
  static std::once_flag said;
  std::call_once(said, [&] {
    BRAID_INFO(Shim, "multipath: rank %d stages a split call's buffers that braid's path cannot take (not device "
               "memory of GPU %d) through device memory (said once)", state.rank, state.cuda_device);
  });
  StagedCall staged;
  if (StagedCall::stage(call, state.nranks, state.rank, path.staging, stream, &staged) != Result::Success)
    return static_cast<ncclResult_t>(Result::UnhandledCudaError);
  const auto ran = static_cast<ncclResult_t>(path.orchestrator->run(staged.call(), stream, entered));
  const Result finished = staged.finish(stream, ran != ncclSuccess);
  if (ran != ncclSuccess) return ran;
  return static_cast<ncclResult_t>(finished);
}

// With a split trace: a call inside a group that braid would split outside one goes in it as
// declined (no trace: nothing is looked up).
void trace_in_group(ncclComm_t comm, const multipath::SplitCall& call) {
  if (settings().split_trace.empty()) return;
  const auto state = splitting_state(comm, call);
  if (!state) return;
  std::lock_guard lock(state->braid_part->mutex);
  multipath::Orchestrator* o = state->braid_part->orchestrator.get();
  if (o != nullptr && o->wants(call)) o->trace_declined(call, "inside an NCCL group");
}

// Whether a call moves a communicator without braid's part on towards it: the first of 1 MiB or
// more (or BRAID_SPLIT_MIN_BYTES) agrees which paths may run, and from then on the first call one
// of them takes makes it (every rank at the same call, as every rank makes the same calls).
bool may_make_part(const BraidPart& path, Collective collective, size_t bytes) {
  if (path.admitted) return multipath::takes(*path.admitted, path.thresholds, collective, bytes);
  const size_t agree_from = settings().split_min_bytes > 0 ? static_cast<size_t>(settings().split_min_bytes) : size_t{1} << 20;
  return bytes >= agree_from;
}

}  // namespace

bool try_split(ncclComm_t comm, const multipath::SplitCall& call, cudaStream_t stream, ncclResult_t* result) {
  // Inside a group NCCL launches at the outermost ncclGroupEnd; braid's share would have to wait
  // for it on the host: such calls are held for the group's end (group_split.h) or go to NCCL.
  if (this_thread_group().in_group()) {
    trace_in_group(comm, call);
    return false;
  }
  return split_now(comm, call, stream, result);
}

bool split_now(ncclComm_t comm, const multipath::SplitCall& call, cudaStream_t stream, ncclResult_t* result) {
  const auto entered = multipath::CallerProfile::Clock::now();
  const auto state = splitting_state(comm, call);
  if (!state) return false;
  BraidPart& path = *state->braid_part;
  std::lock_guard lock(path.mutex);
  const bool first = !path.attempted;
  const size_t bytes = multipath::message_bytes(call, state->nranks);
  if (first) {
    if (!may_make_part(path, call.collective, bytes)) return false;
  } else if (!path.orchestrator || !path.orchestrator->wants(call)) {
    return false;
  }
  // Asked only of calls that would be split, so small collectives pay no CUDA call here. Every
  // rank captures the same calls, so `capturing` is every rank's answer. Making the path
  // allocates, which a capture forbids: a captured call first goes to NCCL.
  const bool capturing = captured(stream);
  if (capturing && first) return false;
  const BufferFit fit = gpu_allows_split(comm, call, *state, path);
  const bool allowed = fit != BufferFit::Unusable;
  if (first) {
    // Making the path is collective (braid's bootstrap, segments, the NVLink path): every rank
    // enters it at this call or none does. This rank's own answer must not keep it out alone, or
    // its peers wait inside the making while it waits in NCCL for them (seen on two H100s): the
    // ranks agree first, and all fall back together when any one cannot. The first such agreement
    // also settles which paths may run at all.
    bool everyone = false;
    if (!path.admitted) {
      multipath::PathsAdmitted paths;
      if (const Result agreed = agree_paths(comm, *state, allowed, &paths, &path.thresholds, &everyone); agreed != Result::Success) {
        // NCCL itself cannot run a collective on this communicator (a full /dev/shm, a dead
        // peer): the application's call answers with NCCL's error, as NCCL's own would have, and
        // braid leaves the communicator to NCCL.
        path.attempted = true;
        *result = static_cast<ncclResult_t>(agreed);
        return true;
      }
      path.admitted = paths;
    } else {
      everyone = all_ranks_ready(comm, real_nccl(), state->cuda_device, allowed);
    }
    if (!everyone) {
      path.attempted = true;
      BRAID_INFO(Shim, "multipath: %s; this communicator's collectives go to NCCL alone",
                 allowed ? "another rank cannot use braid's PCIe path" : "braid's PCIe path cannot take this call here");
      return false;
    }
    // Nothing of braid's can run here: braid makes nothing for the communicator (no engine,
    // staging or threads), and every call goes to NCCL.
    if (!path.admitted->any()) {
      path.attempted = true;
      BRAID_INFO(Init, "multipath: rank %d/%d: %s; this communicator's collectives go to NCCL alone, and braid holds "
                 "nothing for it", state->rank, state->nranks, multipath::describe(*path.admitted).c_str());
      return false;
    }
    // braid makes its part at the first call one of its paths takes, every rank at the same call.
    if (!multipath::takes(*path.admitted, path.thresholds, call.collective, bytes)) return false;
    path.attempted = true;
    path.admitted = multipath::made_at(*path.admitted, path.thresholds, bytes);
    make_orchestrator(comm, *state, path, *path.admitted);
    if (!path.orchestrator || !path.orchestrator->wants(call)) return false;
  } else if (fit == BufferFit::Unusable || (fit == BufferFit::Staged && capturing)) {
    path.orchestrator->trace_declined(call, "the communicator's error, FP8 below sm90, or buffers not on its GPU");
    return false;
  }
  if (fit == BufferFit::Staged) {
    *result = run_staged(call, *state, path, stream, entered);
  } else if (capturing) {
    // braid's NVLink path carries the whole call where it would carry its NVLink share; braid's
    // PCIe share is driven from the host and a graph's replay cannot be: NCCL carries the rest.
    bool carried = false;
    *result = static_cast<ncclResult_t>(path.orchestrator->run_captured(call, stream, &carried));
    if (*result == ncclSuccess && !carried) {
      path.orchestrator->trace_declined(call, "captured in a CUDA graph");
      return false;
    }
  } else {
    *result = static_cast<ncclResult_t>(path.orchestrator->run(call, stream, entered));
  }
  // A failed argument check changes nothing; any other failure leaves the communicator broken.
  if (*result != ncclSuccess && *result != ncclInvalidArgument && *result != ncclInvalidUsage &&
      path.failure.load() == ncclSuccess) {
    std::lock_guard failure_lock(path.failure_mutex);
    path.failure_text = last_error();
    path.failure.store(*result);
    path.staging.leave();
  }
  return true;
}

bool may_split_later(ncclComm_t comm, const multipath::SplitCall& call, cudaStream_t stream) {
  const std::string& groups = settings().split_groups;  // a Choice: auto, 1 or 0
  if (groups == "0") return false;
  const auto state = splitting_state(comm, call);
  if (!state) return false;
  // auto: only where holding a group back paid on GPUs (the held calls run on threads of their own):
  // two of them; on 4x H200 it lost (0.70-0.78x NCCL at 256 MB, docs/PERFORMANCE.md).
  if (groups == "auto" &&
      (state->nranks != 2 || (call.collective != braid::Collective::AllReduce && call.collective != braid::Collective::AllGather) ||
       multipath::message_bytes(call, state->nranks) < byte_threshold(settings().split_groups_min_bytes)))
    return false;
  BraidPart& path = *state->braid_part;
  {
    std::lock_guard lock(path.mutex);
    if (path.attempted ? !path.orchestrator || !path.orchestrator->wants(call)
                       : !may_make_part(path, call.collective, multipath::message_bytes(call, state->nranks)))
      return false;
    // Only what every rank answers alike: a rank holding a call that another hands to NCCL inside
    // the group would wait for it at the group's end. split_now checks this rank's own buffers.
    if (captured(stream)) return false;
  }
  return true;
}

void remember_premulsum(ncclComm_t comm, ncclRedOp_t op, const multipath::PreMulSumSpec& spec) {
  const auto state = comm_table().find(comm);
  if (!state || !state->braid_part) return;
  std::lock_guard lock(state->braid_part->mutex);
  state->braid_part->premulsum[op] = spec;
}

void forget_premulsum(ncclComm_t comm, ncclRedOp_t op) {
  const auto state = comm_table().find(comm);
  if (!state || !state->braid_part) return;
  std::lock_guard lock(state->braid_part->mutex);
  state->braid_part->premulsum.erase(op);
}

std::optional<ncclDataType_t> live_premulsum_type(ncclComm_t comm, ncclRedOp_t op) {
  const auto state = comm_table().find(comm);
  if (!state || !state->braid_part) return std::nullopt;
  std::lock_guard lock(state->braid_part->mutex);
  const auto found = state->braid_part->premulsum.find(op);
  if (found == state->braid_part->premulsum.end()) return std::nullopt;
  return found->second.type;
}

void say_declined(ncclComm_t comm, BraidPart& path, int rank, RouteDecline why, const char* fmt, ...) {
  const auto bit = static_cast<uint32_t>(why);
  if ((path.declines_said.fetch_or(bit) & bit) != 0 || !log_enabled(LogLevel::Info, LogSubsys::Coll)) return;
  char text[320];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  BRAID_INFO(Coll, "routed exchange: rank %d, communicator %p: %s (said once per communicator)", rank,
             static_cast<void*>(comm), text);
}

void abort_braid_part(BraidPart& path) {
  path.staging.leave();
  if (multipath::Orchestrator* o = path.live.load()) o->abort();
  if (peer::RoutedPath* routed = path.routed_live.load()) routed->abort();
}

namespace {

// The exchange `call` makes, the same on every rank (the counts and the root are every rank's).
route::ExchangeLayout exchange_layout(const CallArguments& call, int nranks) {
  const size_t element = datatype_size(static_cast<DataType>(call.datatype));
  switch (call.operation) {
    case Operation::Gather: return route::gather_layout(nranks, call.root, call.count, element);
    case Operation::Scatter: return route::scatter_layout(nranks, call.root, call.count, element);
    default: return route::alltoall_layout(nranks, call.count, element);
  }
}

}  // namespace

bool routable(Operation operation) {
  return operation == Operation::AlltoAll || operation == Operation::Gather || operation == Operation::Scatter;
}

bool try_route_exchange(const CallArguments& call, cudaStream_t stream, ncclResult_t* result) {
  if (!routable(call.operation) || settings().route_exchanges <= 0) return false;
  if (!datatype_valid(static_cast<int>(call.datatype))) return false;
  auto state = comm_table().find(call.comm);
  if (!state || !state->braid_part || state->revoked || state->nranks == 1) return false;
  BraidPart& path = *state->braid_part;
  const char* name = operation_name(call.operation);
  if (this_thread_group().in_group()) {
    say_declined(call.comm, path, state->rank, RouteDecline::InGroup,
                 "an nccl%s inside an NCCL group goes to NCCL (only one made outside a group is routed)", name);
    return false;
  }
  // Each flow of the three is `count` elements. Every rank sees the same count: these answers are
  // every rank's.
  const size_t flow_bytes = call.count * datatype_size(static_cast<DataType>(call.datatype));
  const auto min_bytes = byte_threshold(settings().route_min_bytes);
  if (flow_bytes == 0 || flow_bytes < min_bytes) {
    say_declined(call.comm, path, state->rank, RouteDecline::SmallCollective,
                 "an nccl%s of %zu bytes a flow went to NCCL: exchanges whose flows are under "
                 "BRAID_ROUTE_MIN_BYTES=%zu are not routed", name, flow_bytes, min_bytes);
    return false;
  }
  if (!state->blocking) {
    say_declined(call.comm, path, state->rank, RouteDecline::NonBlocking,
                 "an nccl%s went to NCCL: the communicator is non-blocking (ncclConfig_t.blocking = 0, as PyTorch "
                 "makes it with TORCH_NCCL_USE_COMM_NONBLOCKING=1)", name);
    return false;
  }
  if (!state->complete()) {
    say_declined(call.comm, path, state->rank, RouteDecline::NotReady,
                 "an nccl%s went to NCCL: braid does not know the communicator's rank, size or GPU", name);
    return false;
  }
  if (call.root < 0 || call.root >= state->nranks) return false;  // NCCL's to refuse
  const route::ExchangeLayout layout = exchange_layout(call, state->nranks);
  std::lock_guard lock(path.mutex);
  ++path.alltoalls;  // every rank counts the same calls: they are collective
  if (captured(stream)) {
    say_declined(call.comm, path, state->rank, RouteDecline::Captured,
                 "an nccl%s captured in a CUDA graph goes to NCCL", name);
    return false;
  }
  if (!path.routed_attempted) {
    // Collective: every rank reaches this same call.
    path.routed_attempted = true;
    std::unique_ptr<peer::RoutedPath> made;
    if (peer::RoutedPath::create(call.comm, real_nccl(), &made) != Result::Success) {
      BRAID_WARN(Shim, "routed exchange: not on GPU %d (%s); this communicator's all-to-alls, gathers and scatters go "
                 "to NCCL", state->cuda_device, last_error());
      return false;
    }
    path.routed = std::move(made);
    path.routed_live.store(path.routed.get());
  }
  if (!path.routed) return false;
  bool routed = false;
  const Result r = path.routed->exchange(layout, call.sendbuff, const_cast<void*>(call.recvbuff), stream, &routed);
  if (r == Result::Success && !routed) {
    say_declined(call.comm, path, state->rank, RouteDecline::PathDeclined, "an nccl%s goes to NCCL: %s", name,
                 path.routed->declined());
    return false;
  }
  *result = static_cast<ncclResult_t>(r);
  return true;
}

void release_bounded(std::shared_ptr<BraidPart> path, const char* api) {
  if (!path) return;
  auto done = std::make_shared<std::promise<void>>();
  std::future<void> finished = done->get_future();
  try {
    std::thread([p = std::move(path), done]() mutable {
      p.reset();
      done->set_value();
    }).detach();
  } catch (const std::system_error& e) {
    BRAID_WARN(Shim, "%s: no thread to shut braid's state down on (%s); it is left as it is", api, e.what());
    return;
  }
  const auto bound = std::chrono::duration<double>(std::max(0.0, settings().abort_timeout));
  if (finished.wait_for(bound) != std::future_status::ready)
    BRAID_WARN(Shim, "%s: braid's state did not shut down within BRAID_ABORT_TIMEOUT=%.1f s; returning, it "
               "finishes in the background", api, settings().abort_timeout);
}

ncclResult_t braid_part_failure(ncclComm_t comm, std::string* text) {
  const auto state = comm_table().find(comm);
  if (!state || !state->braid_part) return ncclSuccess;
  BraidPart& path = *state->braid_part;
  const auto failure = static_cast<ncclResult_t>(path.failure.load());
  if (failure != ncclSuccess) {
    std::lock_guard lock(path.failure_mutex);
    if (text != nullptr) *text = path.failure_text;
    return failure;
  }
  // A failure on braid's progress thread, after the call that queued the work returned.
  if (const multipath::Orchestrator* o = path.live.load()) {
    const auto split = static_cast<ncclResult_t>(o->failure(text));
    if (split != ncclSuccess) return split;
  }
  // A routed exchange that failed or timed out after its call returned.
  if (peer::RoutedPath* routed = path.routed_live.load()) return static_cast<ncclResult_t>(routed->failure(text));
  return ncclSuccess;
}

}  // namespace braid::shim
