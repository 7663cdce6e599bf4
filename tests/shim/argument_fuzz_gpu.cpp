// The argument fuzz on GPUs, differential against the real NCCL (docs/SHIM.md, "Argument
// checks"); run by hand, not by ctest.
//
// N ranks are N processes (mpiexec -n N: PMI_RANK, PMI_SIZE), which may share one GPU: each sets
// its own NCCL_HOSTID, so NCCL takes them for separate hosts. Rank 0 hands the ncclUniqueId to the
// others through the file BRAID_FUZZ_ID_FILE. The program is linked against the real libnccl: run
// plain, its nccl* calls are NCCL's; run with LD_PRELOAD=libbraid.so, they are braid's. Each case
// calls the nccl* export, then the real NCCL's pncclXxx entry point with the same arguments, and
// compares the result codes (and ncclGroupEnd's, inside a group) and, where both refuse, the
// ncclGetLastError texts. Every rank runs the same cases in the same order, so a call NCCL accepts
// is matched on every rank, twice. Counts are 256 MB of floats, so the call braid would split is
// the one checked. After the fuzz a 256 MB float sum all-reduce must be exact.
//
// NCCL_CHECK_POINTERS defaults to 1 here, so that null and host buffers are refused (NCCL 2.28.9
// checks no pointer otherwise, and would run such calls). Cases NCCL would accept but that cannot
// run safely (a lone send/recv, too large a count, a buffer that is not device memory) and cases
// that NCCL would accept on some ranks only are skipped; `--list` prints the cases and what is
// done with each, without a GPU.
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <nccl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <iterator>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "fuzz_apis.h"
#include "unique_id_file.h"

namespace {

constexpr size_t kBigCount = size_t{64} << 20;  // 256 MB of floats
constexpr size_t kCapacityBytes = kBigCount * 2 * 8;  // 2 ranks' blocks of the widest type

int g_rank = 0;
int g_size = 1;

[[noreturn, gnu::format(printf, 1, 2)]] void die(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::fprintf(stderr, "argument fuzz: rank %d: ", g_rank);
  std::vfprintf(stderr, fmt, ap);
  std::fputc('\n', stderr);
  va_end(ap);
  std::exit(2);
}

#define CUDA_OK(call)                                                                 \
  do {                                                                                \
    const cudaError_t cuda_ok_ = (call);                                              \
    if (cuda_ok_ != cudaSuccess) die("%s: %s", #call, cudaGetErrorString(cuda_ok_)); \
  } while (0)
#define NCCL_OK(call)                                                                                      \
  do {                                                                                                     \
    const ncclResult_t nccl_ok_ = (call);                                                                  \
    if (nccl_ok_ != ncclSuccess) die("%s: %s (%s)", #call, ncclGetErrorString(nccl_ok_), ncclGetLastError(nullptr)); \
  } while (0)

int env_int(const char* name, int fallback) {
  const char* value = std::getenv(name);
  return value && *value ? std::atoi(value) : fallback;
}

// ---- a watchdog: a case NCCL accepts on some ranks only would hang ----

volatile sig_atomic_t g_current_case = -1;

void on_alarm(int) {
  char text[96] = "argument fuzz: timed out at case ";
  size_t n = std::strlen(text);
  long value = g_current_case;
  char digits[24];
  int d = 0;
  do digits[d++] = static_cast<char>('0' + value % 10); while ((value /= 10) > 0 && d < 20);
  while (d > 0 && n < sizeof text - 2) text[n++] = digits[--d];
  text[n++] = '\n';
  if (write(2, text, n) < 0) _exit(4);
  _exit(3);
}

// ---- the id, through a file ----

ncclUniqueId exchange_id() {
  ncclUniqueId id{};
  const std::string error = braid::shimtest::exchange_unique_id(g_rank, g_size, std::getenv("BRAID_FUZZ_ID_FILE"), &id);
  if (!error.empty()) die("%s (BRAID_FUZZ_ID_FILE: a fresh path all ranks can read)", error.c_str());
  return id;
}

// ---- the cases ----

enum class Buffer { Device, Null, Host };
const char* buffer_name(Buffer b) { return b == Buffer::Device ? "dev" : b == Buffer::Null ? "null" : "host"; }

// Operators by role; their values differ from rank to rank (NCCL mangles them by communicator).
enum class OpKind { Literal, Float32, Float16, Stale, Foreign, Reused };

struct Case {
  Api api = Api::AllReduce;
  bool null_comm = false;
  Buffer send = Buffer::Device;
  Buffer recv = Buffer::Device;  // a Bcast's one buffer
  size_t count = kBigCount;
  int datatype = ncclFloat32;
  OpKind op_kind = OpKind::Literal;
  int op = ncclSum;  // for OpKind::Literal
  int root = 0;
  bool in_group = false;
};

// What a rank knows when it judges a case.
struct Knowledge {
  int nranks = 1;
  bool check_pointers = true;
  std::map<OpKind, int> op_values;  // of this rank
  std::map<int, int> live_ops;      // live PreMulSum operators of the main communicator -> type
};

int op_of(const Case& c, const Knowledge& k) {
  if (!takes_op(c.api)) return ncclSum;
  return c.op_kind == OpKind::Literal ? c.op : k.op_values.at(c.op_kind);
}

std::string describe(const Case& c, const Knowledge& k) {
  char text[200];
  std::snprintf(text, sizeof text, "nccl%s(send=%s recv=%s count=%zu type=%d op=%d root=%d comm=%s%s)",
                api_name(c.api), buffer_name(c.send), buffer_name(c.recv), c.count, c.datatype, op_of(c, k), c.root,
                c.null_comm ? "NULL" : "main", c.in_group ? " in a group" : "");
  return text;
}

size_t type_bytes(int type) {
  static const size_t sizes[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
  return type >= 0 && type < ncclNumTypes ? sizes[type] : 0;
}

// Whether NCCL 2.28.9 accepts the case on rank `rank`: src/enqueue.cc ncclEnqueueCheck,
// src/misc/argcheck.cc ArgsCheck (with CudaPtrCheck under NCCL_CHECK_POINTERS=1), src/enqueue.cc
// taskAppend. Used only to know which cases run for real; the verdicts compared are NCCL's own.
bool nccl_accepts(const Case& c, const Knowledge& k, int rank) {
  if (c.null_comm) return false;
  if (takes_root(c.api) && (c.root < 0 || c.root >= k.nranks)) return false;
  if (c.datatype < 0 || c.datatype >= ncclNumTypes) return false;
  const int op = op_of(c, k);
  if (op < 0) return false;
  const auto live = k.live_ops.find(op);
  if (op >= ncclNumOps && live == k.live_ops.end()) return false;
  const Buffer send = c.api == Api::Bcast ? c.recv : c.send;
  if (k.check_pointers) {
    if (point_to_point(c.api)) {
      const Buffer buffer = c.api == Api::Send ? c.send : c.recv;
      if (c.count > 0 && buffer != Buffer::Device) return false;
    } else {
      const bool broadcast = c.api == Api::Broadcast || c.api == Api::Bcast;
      if ((!broadcast || rank == c.root) && send != Buffer::Device) return false;
      if ((c.api != Api::Reduce || rank == c.root) && c.recv != Buffer::Device) return false;
    }
  }
  if (point_to_point(c.api) || c.count == 0) return true;
  return op < ncclNumOps || live->second == c.datatype;
}

// Elements the call's larger buffer needs.
size_t elements_needed(const Case& c, int nranks) {
  switch (c.api) {
    case Api::AllGather: case Api::ReduceScatter: case Api::AlltoAll: case Api::Gather: case Api::Scatter:
      return c.count > SIZE_MAX / static_cast<size_t>(nranks) ? SIZE_MAX : c.count * nranks;
    default: return c.count;
  }
}

enum class Plan { Refused, Runs, Empty, Skipped };
const char* plan_name(Plan p) {
  switch (p) {
    case Plan::Refused: return "refused by NCCL";
    case Plan::Runs: return "runs";
    case Plan::Empty: return "accepted, nothing to run";
    case Plan::Skipped: return "skipped";
  }
  return "?";
}

// What is done with a case; the same on every rank.
Plan plan(const Case& c, const Knowledge& k) {
  int accepting = 0;
  for (int r = 0; r < k.nranks; ++r) accepting += nccl_accepts(c, k, r);
  if (accepting == 0) return Plan::Refused;
  if (accepting != k.nranks || point_to_point(c.api)) return Plan::Skipped;  // it would hang
  if (c.count == 0) return Plan::Empty;
  const bool device_buffers = c.recv == Buffer::Device && (c.api == Api::Bcast || c.send == Buffer::Device);
  if (!device_buffers || elements_needed(c, k.nranks) > kCapacityBytes / type_bytes(c.datatype)) return Plan::Skipped;
  return Plan::Runs;
}

template <typename T>
const T& pick(std::mt19937& rng, const std::vector<T>& values) {
  return values[rng() % values.size()];
}

// Mostly wrong arguments, one or several; the same list on every rank (fixed seed).
std::vector<Case> make_cases(int count, int nranks, bool check_pointers, std::mt19937& rng) {
  const std::vector<size_t> counts{0, 1, 1000, kBigCount, kBigCount, kBigCount, size_t{1} << 40, SIZE_MAX};
  const std::vector<int> types{-1, INT_MIN, 0, 1, 2, 3, 4, 5, 6, 7, 7, 7, 8, 9, 10, 11, ncclNumTypes, 13, 99};
  const std::vector<int> ops{-1, INT_MIN, ncclSum, ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg, ncclNumOps, 1000, INT_MAX};
  const std::vector<OpKind> kinds{OpKind::Literal, OpKind::Literal, OpKind::Literal, OpKind::Float32,
                                  OpKind::Float16, OpKind::Stale,   OpKind::Foreign, OpKind::Reused};
  const std::vector<int> roots{-1, 0, nranks - 1, nranks - 1, nranks, 7, 99, INT_MIN};
  std::vector<Buffer> buffers{Buffer::Device, Buffer::Device, Buffer::Device};
  if (check_pointers) buffers.insert(buffers.end(), {Buffer::Null, Buffer::Host});
  std::vector<Case> cases;
  for (int i = 0; i < count; ++i) {
    Case c;
    c.api = kApis[rng() % std::size(kApis)];
    c.null_comm = rng() % 16 == 0;
    c.send = pick(rng, buffers);
    c.recv = pick(rng, buffers);
    c.count = pick(rng, counts);
    c.datatype = pick(rng, types);
    c.op_kind = pick(rng, kinds);
    c.op = pick(rng, ops);
    c.root = takes_root(c.api) ? pick(rng, roots) : 0;
    c.in_group = rng() % 6 == 0;
    cases.push_back(c);
  }
  return cases;
}

// ---- running a case twice: through the nccl* exports, then through the real NCCL ----

struct Entries {
  decltype(&ncclAllReduce) all_reduce;
  decltype(&ncclReduce) reduce;
  decltype(&ncclBroadcast) broadcast;
  decltype(&ncclBcast) bcast;
  decltype(&ncclAllGather) all_gather;
  decltype(&ncclReduceScatter) reduce_scatter;
  decltype(&ncclAlltoAll) all_to_all;
  decltype(&ncclGather) gather;
  decltype(&ncclScatter) scatter;
  decltype(&ncclSend) send;
  decltype(&ncclRecv) recv;
  decltype(&ncclGroupStart) group_start;
  decltype(&ncclGroupEnd) group_end;
  decltype(&ncclGetLastError) last_error;
};
// The nccl* names: braid's under LD_PRELOAD=libbraid.so. The pnccl* names are the real NCCL's
// always: libbraid.so exports none.
const Entries kExports{&ncclAllReduce, &ncclReduce,  &ncclBroadcast, &ncclBcast,     &ncclAllGather,
                       &ncclReduceScatter, &ncclAlltoAll, &ncclGather, &ncclScatter, &ncclSend,
                       &ncclRecv,      &ncclGroupStart, &ncclGroupEnd, &ncclGetLastError};
// NCCL's pncclBcast calls the exported ncclBroadcast, which LD_PRELOAD resolves to braid's: the
// reference would then not be NCCL alone. ncclBcast is NCCL's in-place Broadcast, so that is used.
ncclResult_t real_bcast(void* buff, size_t count, ncclDataType_t type, int root, ncclComm_t comm, cudaStream_t stream) {
  return pncclBroadcast(buff, buff, count, type, root, comm, stream);
}
const Entries kRealNccl{&pncclAllReduce, &pncclReduce,  &pncclBroadcast, &real_bcast,     &pncclAllGather,
                        &pncclReduceScatter, &pncclAlltoAll, &pncclGather, &pncclScatter, &pncclSend,
                        &pncclRecv,      &pncclGroupStart, &pncclGroupEnd, &pncclGetLastError};

struct Resources {
  ncclComm_t comm = nullptr;
  ncclComm_t other = nullptr;  // where the foreign operator lives
  cudaStream_t stream = nullptr;
  void* send = nullptr;
  void* recv = nullptr;
  std::vector<char> host = std::vector<char>(4096);  // pageable: no device pointer
  void* half_one = nullptr;                           // a device float16 1.0, a PreMulSum scalar
  float float_half = 0.5f;
};

struct Outcome {
  ncclResult_t call = ncclSuccess;
  ncclResult_t group_end = ncclSuccess;
  std::string text;
};

void* buffer(const Resources& res, Buffer b, void* device) {
  if (b == Buffer::Null) return nullptr;
  return b == Buffer::Host ? const_cast<char*>(res.host.data()) : device;
}

Outcome run(const Entries& e, const Case& c, const Knowledge& k, Resources& res) {
  ncclComm_t comm = c.null_comm ? nullptr : res.comm;
  const void* send = buffer(res, c.send, res.send);
  void* recv = buffer(res, c.recv, res.recv);
  const auto type = static_cast<ncclDataType_t>(c.datatype);
  const auto op = static_cast<ncclRedOp_t>(op_of(c, k));
  Outcome out;
  if (c.in_group && e.group_start() != ncclSuccess) die("ncclGroupStart failed: %s", e.last_error(nullptr));
  switch (c.api) {
    case Api::AllReduce: out.call = e.all_reduce(send, recv, c.count, type, op, comm, res.stream); break;
    case Api::Reduce: out.call = e.reduce(send, recv, c.count, type, op, c.root, comm, res.stream); break;
    case Api::Broadcast: out.call = e.broadcast(send, recv, c.count, type, c.root, comm, res.stream); break;
    case Api::Bcast: out.call = e.bcast(recv, c.count, type, c.root, comm, res.stream); break;
    case Api::AllGather: out.call = e.all_gather(send, recv, c.count, type, comm, res.stream); break;
    case Api::ReduceScatter: out.call = e.reduce_scatter(send, recv, c.count, type, op, comm, res.stream); break;
    case Api::AlltoAll: out.call = e.all_to_all(send, recv, c.count, type, comm, res.stream); break;
    case Api::Gather: out.call = e.gather(send, recv, c.count, type, c.root, comm, res.stream); break;
    case Api::Scatter: out.call = e.scatter(send, recv, c.count, type, c.root, comm, res.stream); break;
    case Api::Send: out.call = e.send(send, c.count, type, c.root, comm, res.stream); break;
    case Api::Recv: out.call = e.recv(recv, c.count, type, c.root, comm, res.stream); break;
  }
  out.text = e.last_error(comm);
  if (c.in_group) out.group_end = e.group_end();
  return out;
}

struct Tally {
  int cases = 0;
  int refused = 0;
  int ran = 0;
  int ran_big = 0;  // of the current phase
  int empty = 0;
  int skipped = 0;
  int mismatches = 0;
};

void mismatch(Tally& tally, int index, const std::string& what) {
  ++tally.mismatches;
  std::printf("MISMATCH rank %d case %d: %s\n", g_rank, index, what.c_str());
  std::fflush(stdout);
}

// Runs the case through both entry points and compares; `max_big_runs` bounds the 256 MB
// collectives run in a phase (each takes a while between processes over sockets).
void run_case(int index, const Case& c, const Knowledge& k, Resources& res, Tally& tally, int max_big_runs) {
  const Plan p = plan(c, k);
  ++tally.cases;
  const bool big = c.count == kBigCount;
  if (p == Plan::Skipped || (p == Plan::Runs && big && tally.ran_big >= max_big_runs)) {
    ++tally.skipped;
    return;
  }
  g_current_case = index;
  const Outcome exported = run(kExports, c, k, res);
  const Outcome real = run(kRealNccl, c, k, res);
  if (p == Plan::Runs) {
    const cudaError_t synced = cudaStreamSynchronize(res.stream);
    if (synced != cudaSuccess) die("case %d %s: the stream failed: %s", index, describe(c, k).c_str(), cudaGetErrorString(synced));
  }
  tally.refused += p == Plan::Refused;
  tally.ran += p == Plan::Runs;
  tally.ran_big += p == Plan::Runs && big;
  tally.empty += p == Plan::Empty;
  const std::string call = describe(c, k);
  if (exported.call != real.call || exported.group_end != real.group_end) {
    mismatch(tally, index, call + ": export " + std::to_string(exported.call) + " (group end " +
                               std::to_string(exported.group_end) + ") \"" + exported.text + "\", NCCL " +
                               std::to_string(real.call) + " (group end " + std::to_string(real.group_end) + ") \"" +
                               real.text + "\"");
  } else if (exported.call != ncclSuccess && exported.text != real.text) {
    mismatch(tally, index, call + ": text \"" + exported.text + "\", NCCL's \"" + real.text + "\"");
  }
  if ((p == Plan::Refused) != (real.call != ncclSuccess && real.call != ncclInProgress) && p != Plan::Skipped)
    std::printf("note rank %d case %d: %s: NCCL answered %d, this program expected it to %s\n", g_rank, index,
                call.c_str(), real.call, p == Plan::Refused ? "refuse" : "accept");
}

// A ring of sends and receives in one group, through both entry points: valid send/recv still work.
void ring_exchange(Resources& res, Tally& tally) {
  const int next = (g_rank + 1) % g_size;
  const int prev = (g_rank + g_size - 1) % g_size;
  ncclResult_t results[2];
  for (int i = 0; i < 2; ++i) {
    const Entries& e = i == 0 ? kExports : kRealNccl;
    ncclResult_t r = e.group_start();
    if (r == ncclSuccess) r = e.send(res.send, kBigCount, ncclFloat32, next, res.comm, res.stream);
    if (r == ncclSuccess) r = e.recv(res.recv, kBigCount, ncclFloat32, prev, res.comm, res.stream);
    const ncclResult_t end = e.group_end();
    results[i] = r != ncclSuccess ? r : end;
    CUDA_OK(cudaStreamSynchronize(res.stream));
  }
  if (results[0] != ncclSuccess || results[1] != ncclSuccess)
    mismatch(tally, -1, "send/recv ring: export " + std::to_string(results[0]) + ", NCCL " + std::to_string(results[1]));
}

// The sum of every rank's (rank + 1) * (1 + i % 13): small integers, exact in float.
bool all_reduce_is_exact(Resources& res) {
  std::vector<float> host(kBigCount);
  for (size_t i = 0; i < kBigCount; ++i) host[i] = static_cast<float>((g_rank + 1) * (1 + static_cast<int>(i % 13)));
  CUDA_OK(cudaMemcpy(res.send, host.data(), kBigCount * sizeof(float), cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemset(res.recv, 0, kBigCount * sizeof(float)));
  NCCL_OK(ncclAllReduce(res.send, res.recv, kBigCount, ncclFloat32, ncclSum, res.comm, res.stream));
  CUDA_OK(cudaStreamSynchronize(res.stream));
  CUDA_OK(cudaMemcpy(host.data(), res.recv, kBigCount * sizeof(float), cudaMemcpyDeviceToHost));
  const float ranks_sum = static_cast<float>(g_size * (g_size + 1) / 2);
  size_t wrong = 0;
  for (size_t i = 0; i < kBigCount; ++i) {
    const float want = ranks_sum * static_cast<float>(1 + i % 13);
    if (host[i] != want && wrong++ == 0)
      std::printf("all-reduce: rank %d element %zu is %g, want %g\n", g_rank, i, host[i], want);
  }
  if (wrong > 0) std::printf("all-reduce: rank %d: %zu of %zu elements wrong\n", g_rank, wrong, kBigCount);
  return wrong == 0;
}

int make_op(ncclComm_t comm, void* scalar, int type, ncclScalarResidence_t residence) {
  ncclRedOp_t op{};
  NCCL_OK(ncclRedOpCreatePreMulSum(&op, scalar, static_cast<ncclDataType_t>(type), residence, comm));
  return static_cast<int>(op);
}

const char* library_of(void* symbol) {
  Dl_info info{};
  return dladdr(symbol, &info) != 0 && info.dli_fname ? info.dli_fname : "?";
}

}  // namespace

int main(int argc, char** argv) {
  const bool list_only = argc > 1 && std::strcmp(argv[1], "--list") == 0;
  g_rank = env_int("PMI_RANK", 0);
  g_size = env_int("PMI_SIZE", 1);
  if (g_size < 1 || g_rank < 0 || g_rank >= g_size) die("PMI_RANK %d / PMI_SIZE %d", g_rank, g_size);
  const int cases_per_phase = env_int("BRAID_FUZZ_CASES", 1500);
  const int max_big_runs = env_int("BRAID_FUZZ_BIG_RUNS", 10);  // 256 MB collectives a phase runs
  // Before NCCL reads its settings: one "host" per process, pointers checked.
  const char* host_id = std::getenv("NCCL_HOSTID");
  const std::string own_host = std::string(host_id ? host_id : "braid-fuzz") + "-rank" + std::to_string(g_rank);
  setenv("NCCL_HOSTID", own_host.c_str(), 1);
  setenv("NCCL_CHECK_POINTERS", "1", 0);

  Knowledge k;
  k.nranks = g_size;
  k.check_pointers = env_int("NCCL_CHECK_POINTERS", 0) == 1;
  std::mt19937 rng(20251114);
  if (list_only) {
    // Stand-in operator values; live: Float32, Float16 (Stale and Reused are one destroyed value).
    k.op_values = {{OpKind::Float32, 5}, {OpKind::Float16, 6}, {OpKind::Stale, 7}, {OpKind::Foreign, 1005}, {OpKind::Reused, 7}};
    k.live_ops = {{5, ncclFloat32}, {6, ncclFloat16}};
    std::map<Plan, int> plans;
    int index = 0;
    for (const Case& c : make_cases(cases_per_phase, g_size, k.check_pointers, rng)) {
      const Plan p = plan(c, k);
      ++plans[p];
      std::printf("%d %s: %s\n", index++, describe(c, k).c_str(), plan_name(p));
    }
    for (const auto& [p, n] : plans) std::printf("# %s: %d\n", plan_name(p), n);
    return 0;
  }

  int devices = 0;
  CUDA_OK(cudaGetDeviceCount(&devices));
  CUDA_OK(cudaSetDevice(g_rank % devices));
  std::printf("argument fuzz: rank %d of %d on GPU %d of %d; nccl* calls go to %s; NCCL_CHECK_POINTERS=%d\n", g_rank,
              g_size, g_rank % devices, devices, library_of(reinterpret_cast<void*>(&ncclAllReduce)), k.check_pointers);
  std::fflush(stdout);

  Resources res;
  const ncclUniqueId id = exchange_id();
  NCCL_OK(ncclCommInitRank(&res.comm, g_size, id, g_rank));
  // Every rank has read the id once the communicator exists: no later run can take it for its own.
  if (g_rank == 0 && g_size > 1) std::remove(std::getenv("BRAID_FUZZ_ID_FILE"));
  NCCL_OK(ncclCommSplit(res.comm, 0, g_rank, &res.other, nullptr));
  CUDA_OK(cudaStreamCreateWithFlags(&res.stream, cudaStreamNonBlocking));
  CUDA_OK(cudaMalloc(&res.send, kCapacityBytes));
  CUDA_OK(cudaMalloc(&res.recv, kCapacityBytes));
  CUDA_OK(cudaMemset(res.send, 0, kCapacityBytes));
  CUDA_OK(cudaMemset(res.recv, 0, kCapacityBytes));
  const uint16_t half_one_bits = 0x3c00;
  CUDA_OK(cudaMalloc(&res.half_one, sizeof half_one_bits));
  CUDA_OK(cudaMemcpy(res.half_one, &half_one_bits, sizeof half_one_bits, cudaMemcpyHostToDevice));

  // PreMulSum operators: two live ones, one destroyed, one of the other communicator.
  k.op_values[OpKind::Float32] = make_op(res.comm, &res.float_half, ncclFloat32, ncclScalarHostImmediate);
  k.op_values[OpKind::Float16] = make_op(res.comm, res.half_one, ncclFloat16, ncclScalarDevice);
  k.op_values[OpKind::Stale] = make_op(res.comm, &res.float_half, ncclInt32, ncclScalarHostImmediate);
  k.op_values[OpKind::Reused] = k.op_values[OpKind::Stale];
  k.op_values[OpKind::Foreign] = make_op(res.other, &res.float_half, ncclFloat32, ncclScalarHostImmediate);
  k.live_ops = {{k.op_values[OpKind::Float32], ncclFloat32}, {k.op_values[OpKind::Float16], ncclFloat16}};
  NCCL_OK(ncclRedOpDestroy(static_cast<ncclRedOp_t>(k.op_values[OpKind::Stale]), res.comm));

  signal(SIGALRM, on_alarm);
  alarm(static_cast<unsigned>(env_int("BRAID_FUZZ_TIMEOUT", 900)));
  Tally tally;
  int index = 0;
  // Three phases: a destroyed operator's value; the same value live again (NCCL hands it out to
  // the next operator made); destroyed once more.
  for (int phase = 0; phase < 3; ++phase) {
    if (phase == 1) {
      const int reused = make_op(res.comm, &res.float_half, ncclFloat64, ncclScalarHostImmediate);
      if (reused != k.op_values[OpKind::Reused])
        std::printf("note rank %d: NCCL gave operator %d, not the destroyed %d, to the next one made\n", g_rank, reused,
                    k.op_values[OpKind::Reused]);
      k.op_values[OpKind::Reused] = reused;
      k.live_ops[reused] = ncclFloat64;
    } else if (phase == 2) {
      NCCL_OK(ncclRedOpDestroy(static_cast<ncclRedOp_t>(k.op_values[OpKind::Reused]), res.comm));
      k.live_ops.erase(k.op_values[OpKind::Reused]);
    }
    tally.ran_big = 0;
    for (const Case& c : make_cases(cases_per_phase, g_size, k.check_pointers, rng))
      run_case(index++, c, k, res, tally, max_big_runs);
  }
  g_current_case = -2;
  ring_exchange(res, tally);
  g_current_case = -3;
  const bool exact = all_reduce_is_exact(res);
  alarm(0);

  std::printf("argument fuzz: rank %d: %d cases: %d refused, %d ran (each twice), %d accepted with nothing to run, "
              "%d skipped; %d mismatches; the 256 MB all-reduce is %s\n",
              g_rank, tally.cases, tally.refused, tally.ran, tally.empty, tally.skipped, tally.mismatches,
              exact ? "exact" : "WRONG");
  for (const auto& [op, type] : k.live_ops) ncclRedOpDestroy(static_cast<ncclRedOp_t>(op), res.comm);
  ncclRedOpDestroy(static_cast<ncclRedOp_t>(k.op_values[OpKind::Foreign]), res.other);
  cudaFree(res.send);
  cudaFree(res.recv);
  cudaFree(res.half_one);
  ncclCommDestroy(res.other);
  ncclCommDestroy(res.comm);
  return tally.mismatches == 0 && exact ? 0 : 1;
}
