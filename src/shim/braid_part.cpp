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

#include "api/from_nccl.h"
#include "common/log.h"
#include "common/result.h"
#include "common/settings.h"
#include "common/sizes.h"
#include "multipath/paths_admitted.h"
#include "route/grouped_exchange.h"
#include "shim/comm_table.h"
#include "shim/group_state.h"
#include "nccl/real.h"
#include "shim/staged_call.h"

namespace braid::shim {

namespace {

// Every rank learns every rank's words, combined by the maximum, through NCCL on a private
// stream: NCCL's error where that failed.
template <size_t N>
Result ranks_maximum(ncclComm_t comm, const nccl::RealNccl& real, int device, const char* what, std::array<int32_t, N>* words) {
  int previous = 0;
  cudaGetDevice(&previous);
  cudaSetDevice(device);
  const Result r = api::ranks_maximum(comm, real, *words, what);
  if (r != Result::Success) BRAID_WARN(Shim, "multipath: %s", last_error());
  cudaGetLastError();
  cudaSetDevice(previous);
  return r;
}

// Every rank learns whether every rank made its PCIe path (a rank that splits while another does
// not would hang NCCL).
bool all_ranks_ready(ncclComm_t comm, const nccl::RealNccl& real, int device, bool mine) {
  std::array<int32_t, 1> refused{mine ? 0 : 1};
  return ranks_maximum(comm, real, device, "the PCIe paths' readiness (ncclAllReduce max)", &refused) == Result::Success &&
         refused[0] == 0;
}

// Whether this machine's GPUs are joined by NVLink (braid's topology, discovered once a process).
bool machine_has_nvlink() {
  topo::Topology machine;
  return api::machine_topology(&machine) == Result::Success && machine.has_nvlink();
}

// The paths every rank admits by `options`, and whether every rank can take this call at all
// (`mine`): one agreement through NCCL, at the first call worth splitting, with the sizes each
// path takes calls from. NCCL's error where it failed.
Result agree_paths(ncclComm_t comm, const CommState& state, bool mine, const multipath::OrchestratorOptions& options,
                   multipath::PathsAdmitted* agreed, multipath::PathThresholds* thresholds, bool* everyone) {
  const bool nvlink = machine_has_nvlink();  // the machine's topology, read once here
  *thresholds = options.thresholds(nvlink);
  // What this rank's process allows braid to use on the communicator (multipath/paths_admitted.h).
  const std::array<int32_t, 2> paths = multipath::encode(multipath::admit_paths(options.facts(state.nranks, nvlink)));
  std::array<int32_t, 3> words{mine ? 0 : 1, paths[0], paths[1]};
  BRAID_TRY(ranks_maximum(comm, nccl::real_nccl(), state.cuda_device,
                          "the ranks' agreement on braid's paths (ncclAllReduce max)", &words));
  *everyone = words[0] == 0;
  *agreed = multipath::decode({words[1], words[2]});
  return Result::Success;
}

void make_orchestrator(ncclComm_t comm, const CommState& state, BraidPart& path, const multipath::PathsAdmitted& paths) {
  path.attempted = true;
  const nccl::RealNccl& real = nccl::real_nccl();
  std::unique_ptr<multipath::Orchestrator> made;
  const Result r = [&] {
    const FailuresReportedByCaller once;  // the WARN below says why, once
    return multipath::Orchestrator::create(comm, real, &made, &paths, &path.agreed_by);
  }();
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

PartOptions PartOptions::from_settings() {
  const Settings& s = settings();
  PartOptions o;
  if (s.split_min_bytes > 0) o.agree_from = static_cast<size_t>(s.split_min_bytes);
  // A Choice: auto, 1 or 0.
  o.group_holding = s.split_groups == "0"   ? multipath::GroupHolding::Off
                    : s.split_groups == "1" ? multipath::GroupHolding::On
                                            : multipath::GroupHolding::Auto;
  o.group_min_bytes = byte_threshold(s.split_groups_min_bytes);
  o.route_min_bytes = byte_threshold(s.route_min_bytes);
  return o;
}

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

using multipath::BufferFit;

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
BufferFit buffers_fit(const nccl::Call& call, const CommState& state, BraidPart& path) {
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
bool fp8_reduction_supported(const nccl::Call& call, const CommState& state, BraidPart& path) {
  const bool fp8 = call.type == ncclFloat8e4m3 || call.type == ncclFloat8e5m2;
  if (!fp8 || !collective_reduces(call.collective())) return true;
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
BufferFit gpu_allows_split(ncclComm_t comm, const nccl::Call& call, const CommState& state, BraidPart& path) {
  const nccl::RealNccl& real = nccl::real_nccl();
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
ncclResult_t run_staged(const nccl::Call& call, const CommState& state, BraidPart& path, cudaStream_t stream,
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

// Whether a call moves a communicator without braid's part on towards it: the first of 1 MiB or
// more (or BRAID_SPLIT_MIN_BYTES) agrees which paths may run, and from then on the first call one
// of them takes makes it (every rank at the same call, as every rank makes the same calls).
bool may_make_part(const BraidPart& path, Collective collective, size_t bytes) {
  if (path.admitted) return multipath::takes(*path.admitted, path.thresholds, collective, bytes);
  return bytes >= path.options.agree_from;
}

// The CUDA questions of one call (multipath::AdmissionProbes), each asked at most once, with
// `path` locked.
class CallProbes final : public multipath::AdmissionProbes {
 public:
  CallProbes(const nccl::Call& call, const CommState& state, BraidPart& path, cudaStream_t stream)
      : call_(call), state_(state), path_(path), stream_(stream) {}
  bool capturing() override {
    if (!capturing_) capturing_ = captured(stream_);
    return *capturing_;
  }
  BufferFit buffers() override {
    if (!fit_) fit_ = gpu_allows_split(call_.comm, call_, state_, path_);
    return *fit_;
  }

 private:
  const nccl::Call& call_;
  const CommState& state_;
  BraidPart& path_;
  cudaStream_t stream_;
  std::optional<bool> capturing_;
  std::optional<BufferFit> fit_;
};

// Answers where the decision never reaches a probe (an unknown communicator).
class NoProbes final : public multipath::AdmissionProbes {
 public:
  bool capturing() override { return true; }
  BufferFit buffers() override { return BufferFit::Unusable; }
};

// What the call and the thread's group say, before the communicator is looked up.
multipath::AdmissionFacts call_facts(const nccl::Call& call, const Grouping& group) {
  multipath::AdmissionFacts f;
  f.collective = call.collective();
  f.type_valid = datatype_valid(static_cast<int>(call.type));
  f.premulsum = call.op >= ncclNumOps && collective_reduces(call.collective());
  f.in_group = group.in_group;
  f.group_defers = group.defers;
  return f;
}

// The communicator's facts and its part's (with `path` locked when it has one).
void add_comm_facts(const nccl::Call& call, const CommState& state, multipath::AdmissionFacts* f) {
  f->comm_known = state.braid_part != nullptr && state.complete();
  f->nranks = state.nranks;
  f->blocking = state.blocking;
  f->revoked = state.revoked;
  f->bytes_fit = f->comm_known && state.nranks > 0 && multipath::message_bytes_fit(call, state.nranks);
  f->bytes = f->bytes_fit ? multipath::message_bytes(call, state.nranks) : 0;
  if (state.braid_part != nullptr) {
    f->group_holding = state.braid_part->options.group_holding;
    f->group_min_bytes = state.braid_part->options.group_min_bytes;
  }
}
void add_part_facts(const nccl::Call& call, const BraidPart& path, multipath::AdmissionFacts* f) {
  f->part_attempted = path.attempted;
  f->part_made = path.orchestrator != nullptr;
  f->part_may_make = !path.attempted && f->bytes_fit && may_make_part(path, call.collective(), f->bytes);
  f->part_takes = f->part_made && f->bytes_fit && path.orchestrator->takes(call);
}

// Says the decision: every call at TRACE, and at INFO the first call of each reason on the
// communicator (BRAID_DEBUG_SUBSYS=COLL).
void say(const nccl::Call& call, const multipath::Admission& a, const CommState* state, BraidPart* path) {
  const int rank = state != nullptr ? state->rank : -1;
  const uint32_t bit = 1u << static_cast<uint32_t>(a.reason);
  // A load first: the read-modify-write only once per reason.
  const bool first = path != nullptr && (path->admissions_said.load(std::memory_order_relaxed) & bit) == 0 &&
                     (path->admissions_said.fetch_or(bit) & bit) == 0;
  if (!first && !log_enabled(LogLevel::Trace, LogSubsys::Coll)) return;
  const std::string type = datatype_valid(static_cast<int>(call.type))
                               ? std::string(datatype_name(static_cast<DataType>(call.type)))
                               : "type " + std::to_string(static_cast<int>(call.type));
  const std::string text = std::string(collective_name(call.collective())) + " of " + std::to_string(call.count) + " " +
                           type + ": " + multipath::route_name(a.route) + " (" + multipath::reason_text(a.reason) + ")";
  if (first) {
    BRAID_INFO(Coll, "multipath: rank %d, communicator %p: %s (said once per reason and communicator)", rank,
               static_cast<void*>(call.comm), text.c_str());
  } else {
    BRAID_TRACE(Coll, "multipath: rank %d, communicator %p: %s", rank, static_cast<void*>(call.comm), text.c_str());
  }
}

// The first call braid's part may take: the ranks agree which paths may run and make the part,
// every rank at this call or none.
enum class Making { Made, Nccl, Failed };
Making make_part(ncclComm_t comm, const nccl::Call& call, const CommState& state, BraidPart& path,
                 bool allowed, size_t bytes, ncclResult_t* failed) {
  // Making the path is collective (braid's bootstrap, segments, the NVLink path): every rank
  // enters it at this call or none does. This rank's own answer must not keep it out alone, or
  // its peers wait inside the making while it waits in NCCL for them (seen on two H100s): the
  // ranks agree first, and all fall back together when any one cannot. The first such agreement
  // also settles which paths may run at all.
  bool everyone = false;
  if (!path.admitted) {
    multipath::PathsAdmitted paths;
    path.agreed_by = multipath::OrchestratorOptions::from_settings();
    if (const Result agreed = agree_paths(comm, state, allowed, path.agreed_by, &paths, &path.thresholds, &everyone);
        agreed != Result::Success) {
      // NCCL itself cannot run a collective on this communicator (a full /dev/shm, a dead
      // peer): the application's call answers with NCCL's error, as NCCL's own would have, and
      // braid leaves the communicator to NCCL.
      path.attempted = true;
      *failed = static_cast<ncclResult_t>(agreed);
      return Making::Failed;
    }
    path.admitted = paths;
  } else {
    everyone = all_ranks_ready(comm, nccl::real_nccl(), state.cuda_device, allowed);
  }
  if (!everyone) {
    path.attempted = true;
    BRAID_INFO(Shim, "multipath: %s; this communicator's collectives go to NCCL alone",
               allowed ? "another rank cannot use braid's PCIe path" : "braid's PCIe path cannot take this call here");
    return Making::Nccl;
  }
  // Nothing of braid's can run here: braid makes nothing for the communicator (no engine,
  // staging or threads), and every call goes to NCCL.
  if (!path.admitted->any()) {
    path.attempted = true;
    BRAID_INFO(Init, "multipath: rank %d/%d: %s; this communicator's collectives go to NCCL alone, and braid holds "
               "nothing for it", state.rank, state.nranks, multipath::describe(*path.admitted).c_str());
    return Making::Nccl;
  }
  // braid makes its part at the first call one of its paths takes, every rank at the same call.
  if (!multipath::takes(*path.admitted, path.thresholds, call.collective(), bytes)) return Making::Nccl;
  path.attempted = true;
  path.admitted = multipath::made_at(*path.admitted, path.thresholds, bytes);
  make_orchestrator(comm, state, path, *path.admitted);
  return path.orchestrator != nullptr ? Making::Made : Making::Nccl;
}

// Runs a call the decision gave braid's paths; false: NCCL alone takes it after all.
bool run_taken(const nccl::Call& call, const multipath::Admission& a, const CommState& state, BraidPart& path,
               cudaStream_t stream, multipath::CallerProfile::Clock::time_point entered, ncclResult_t* result) {
  if (a.route == multipath::Route::Staged) {
    *result = run_staged(call, state, path, stream, entered);
  } else if (a.route == multipath::Route::Captured) {
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

}  // namespace

Handled split_or_hold(const nccl::Call& call, const std::optional<CommState>& state, cudaStream_t stream,
                      const Grouping& group, ncclResult_t* result) {
  const auto entered = multipath::CallerProfile::Clock::now();
  const ncclComm_t comm = call.comm;
  multipath::AdmissionFacts facts = call_facts(call, group);
  if (state && multipath::splittable(call.collective()) && facts.type_valid) add_comm_facts(call, *state, &facts);
  if (!facts.comm_known) {
    // No part to say it once for: the reason only at TRACE, worked out only then.
    if (log_enabled(LogLevel::Trace, LogSubsys::Coll)) {
      NoProbes none;
      say(call, multipath::admit(facts, none), state ? &*state : nullptr, nullptr);
    }
    return Handled::Nccl;
  }
  BraidPart& path = *state->braid_part;
  std::lock_guard lock(path.mutex);
  add_part_facts(call, path, &facts);
  CallProbes probes(call, *state, path, stream);
  multipath::Admission a = multipath::admit(facts, probes);
  if (a.route == multipath::Route::Make) {
    const Making made = make_part(comm, call, *state, path, a.fit != BufferFit::Unusable, facts.bytes, result);
    // Failed: NCCL itself could not run the ranks' agreement, and the call answers with its error.
    if (made != Making::Made) return made == Making::Failed ? Handled::Ran : Handled::Nccl;
    // Asked again of the part now made (the probes keep their answers).
    add_part_facts(call, path, &facts);
    a = multipath::admit(facts, probes);
  }
  say(call, a, &*state, &path);
  switch (a.route) {
    case multipath::Route::Nccl:
      if (a.traced() && path.orchestrator) path.orchestrator->trace_declined(call, multipath::reason_text(a.reason));
      return Handled::Nccl;
    case multipath::Route::Hold:
      return Handled::Held;
    case multipath::Route::Make:  // made above: never asked again
      return Handled::Nccl;
    default:
      return run_taken(call, a, *state, path, stream, entered, result) ? Handled::Ran : Handled::Nccl;
  }
}

bool split_now(const nccl::Call& call, cudaStream_t stream, ncclResult_t* result) {
  return split_or_hold(call, comm_table().find(call.comm), stream, Grouping{}, result) == Handled::Ran;
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
route::ExchangeLayout exchange_layout(const nccl::Call& call, int nranks) {
  const size_t element = datatype_size(static_cast<DataType>(call.type));
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

bool try_route_exchange(const nccl::Call& call, cudaStream_t stream, ncclResult_t* result) {
  if (!routable(call.operation) || settings().route_exchanges <= 0) return false;
  if (!datatype_valid(static_cast<int>(call.type))) return false;
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
  const size_t flow_bytes = call.count * datatype_size(static_cast<DataType>(call.type));
  const size_t min_bytes = path.options.route_min_bytes;
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
    if (peer::RoutedPath::create(call.comm, nccl::real_nccl(), &made) != Result::Success) {
      BRAID_WARN(Shim, "routed exchange: not on GPU %d (%s); this communicator's all-to-alls, gathers and scatters go "
                 "to NCCL", state->cuda_device, last_error());
      return false;
    }
    path.routed = std::move(made);
    path.routed_live.store(path.routed.get());
  }
  if (!path.routed) return false;
  bool routed = false;
  const Result r = path.routed->exchange(layout, call.send, call.recv, stream, &routed);
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
