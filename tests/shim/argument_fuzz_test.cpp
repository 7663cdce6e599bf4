// NCCL's argument checks through libbraid.so's exports (src/shim/arguments.h), on the CPU: the
// test is linked against libbraid.so, which forwards to the fake NCCL (fake_nccl.h). Every
// collective and send/recv gets edge-case and random arguments (fixed seed), and each answer is
// held against NCCL 2.28.9's as its source gives it (expected() below): the result code,
// ncclGetLastError's text, and whether the call reached NCCL. No call may throw or crash.
#include <gtest/gtest.h>
#include <nccl.h>

#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "fake_nccl.h"
#include "fuzz_apis.h"

namespace {

// Before libbraid.so's first call reads its settings: braid forwards to the fake NCCL, and no
// call is large enough for braid to split, so braid asks CUDA nothing (on a GPU machine too) and
// every call it accepts reaches NCCL. braid still counts each call's bytes to decide that.
const bool kFakeNcclChosen = [] {
  setenv("BRAID_NCCL_LIBRARY", BRAID_FAKE_NCCL_PATH, 1);
  setenv("BRAID_SPLIT_MIN_BYTES", "0x4000000000000000", 1);
  unsetenv("BRAID_DISABLE");
  return true;
}();

// A stream the fake records; never used as one.
const cudaStream_t kStream = reinterpret_cast<cudaStream_t>(uintptr_t{0x5eed});

// The name in NCCL's texts (src/collectives.cc: ncclBcast is ncclBroadcast in place).
std::string nccl_name(Api api) { return api == Api::Bcast ? "Broadcast" : api_name(api); }

// What the test knows of a communicator: NCCL's state of it, as the checks depend on it.
struct CommModel {
  std::string name;
  ncclComm_t comm = nullptr;
  int nranks = 0;
  bool blocking = true;
  bool revoked = false;
  bool async_error = false;
  std::map<int, int> live_ops;  // PreMulSum operator -> the data type it was made for
};

struct Call {
  Api api = Api::AllReduce;
  const CommModel* comm = nullptr;  // null: a null communicator
  const void* send = nullptr;
  void* recv = nullptr;
  size_t count = 0;
  int datatype = ncclFloat32;
  int op = ncclSum;  // ncclSum where the API takes none
  int root = 0;      // the root or peer; 0 where the API takes none
  bool in_group = false;
};

std::string describe(const Call& c) {
  char text[256];
  std::snprintf(text, sizeof text, "nccl%s(send=%p recv=%p count=%zu type=%d op=%d root=%d comm=%s%s)",
                api_name(c.api), c.send, c.recv, c.count, c.datatype, c.op, c.root,
                c.comm ? c.comm->name.c_str() : "NULL", c.in_group ? " in a group" : "");
  return text;
}

ncclComm_t comm_of(const Call& c) { return c.comm ? c.comm->comm : nullptr; }

ncclResult_t invoke(const Call& c) {
  const auto type = static_cast<ncclDataType_t>(c.datatype);
  const auto op = static_cast<ncclRedOp_t>(c.op);
  ncclComm_t comm = comm_of(c);
  switch (c.api) {
    case Api::AllReduce: return ncclAllReduce(c.send, c.recv, c.count, type, op, comm, kStream);
    case Api::Reduce: return ncclReduce(c.send, c.recv, c.count, type, op, c.root, comm, kStream);
    case Api::Broadcast: return ncclBroadcast(c.send, c.recv, c.count, type, c.root, comm, kStream);
    case Api::Bcast: return ncclBcast(c.recv, c.count, type, c.root, comm, kStream);
    case Api::AllGather: return ncclAllGather(c.send, c.recv, c.count, type, comm, kStream);
    case Api::ReduceScatter: return ncclReduceScatter(c.send, c.recv, c.count, type, op, comm, kStream);
    case Api::AlltoAll: return ncclAlltoAll(c.send, c.recv, c.count, type, comm, kStream);
    case Api::Gather: return ncclGather(c.send, c.recv, c.count, type, c.root, comm, kStream);
    case Api::Scatter: return ncclScatter(c.send, c.recv, c.count, type, c.root, comm, kStream);
    case Api::Send: return ncclSend(c.send, c.count, type, c.root, comm, kStream);
    case Api::Recv: return ncclRecv(c.recv, c.count, type, c.root, comm, kStream);
  }
  return ncclInternalError;
}

// The buffers the fake records for the call.
const void* recorded_send(const Call& c) {
  if (c.api == Api::Bcast) return c.recv;
  return c.api == Api::Recv ? nullptr : c.send;
}
const void* recorded_recv(const Call& c) { return c.api == Api::Send ? nullptr : c.recv; }

// NCCL 2.28.9's answer, restated from its source (tag v2.28.9-1), in the order NCCL checks:
//  - src/enqueue.cc ncclEnqueueCheck -> src/misc/argcheck.cc CommCheck -> PtrCheck: a null
//    communicator, ncclInvalidArgument, "<Op> : comm argument is NULL";
//  - ncclEnqueueCheck: a revoked communicator, ncclInvalidUsage, "<Op>: communicator was revoked";
//  - ncclEnqueueCheck -> ncclCommEnsureReady: a communicator's asynchronous error is returned as it
//    is (NCCL answers: braid leaves such a call to it);
//  - src/misc/argcheck.cc ArgsCheck: root (a send/recv's peer) outside 0..nranks-1, "<Op> : invalid
//    root <r> (root should be in the 0..<nranks> range)"; data type outside 0..ncclNumTypes-1,
//    "<Op> : invalid type <t>"; a negative operator, "<Op> : invalid reduction operation <o>"; an
//    operator from ncclNumOps on that is not a live PreMulSum operator of this communicator,
//    "<Op> : reduction operation <o> unknown to this communicator" (all ncclInvalidArgument);
//  - src/enqueue.cc taskAppend: a collective (not send/recv) of count 0 is dropped, accepted; then
//    hostToDevRedOp: a PreMulSum operator made for another data type, ncclInvalidArgument, "Data
//    type supplied to user-created ncclRedOp_t does not match type given to reduction operation".
// NCCL checks no buffer pointer and no size unless NCCL_CHECK_POINTERS=1 (ArgsCheck's
// CudaPtrCheck, which needs a GPU): null buffers and huge counts are accepted.
// A non-blocking communicator's errors also become its asynchronous error: braid leaves all its
// calls to NCCL.
struct Expected {
  bool nccl_answers = false;  // braid leaves the call to NCCL (the fake accepts it)
  ncclResult_t result = ncclSuccess;
  std::string text;  // the refusal's, NCCL's words
};

Expected refused(ncclResult_t result, const std::string& text) { return {false, result, text}; }

std::optional<Expected> args_check(const Call& c) {
  const std::string op_name = nccl_name(c.api);
  const int nranks = c.comm->nranks;
  if (c.root < 0 || c.root >= nranks)
    return refused(ncclInvalidArgument, op_name + " : invalid root " + std::to_string(c.root) +
                                            " (root should be in the 0.." + std::to_string(nranks) + " range)");
  if (c.datatype < 0 || c.datatype >= ncclNumTypes)
    return refused(ncclInvalidArgument, op_name + " : invalid type " + std::to_string(c.datatype));
  if (c.op < 0) return refused(ncclInvalidArgument, op_name + " : invalid reduction operation " + std::to_string(c.op));
  if (c.op < ncclNumOps) return std::nullopt;
  const auto live = c.comm->live_ops.find(c.op);
  if (live == c.comm->live_ops.end())
    return refused(ncclInvalidArgument,
                   op_name + " : reduction operation " + std::to_string(c.op) + " unknown to this communicator");
  if (point_to_point(c.api) || c.count == 0 || live->second == c.datatype) return std::nullopt;
  return refused(ncclInvalidArgument,
                 "Data type supplied to user-created ncclRedOp_t does not match type given to reduction operation");
}

Expected expected(const Call& c) {
  const std::string op_name = nccl_name(c.api);
  if (c.comm == nullptr) return refused(ncclInvalidArgument, op_name + " : comm argument is NULL");
  if (!c.comm->blocking) return {true, ncclSuccess, ""};
  if (c.comm->revoked) return refused(ncclInvalidUsage, op_name + ": communicator was revoked");
  const std::optional<Expected> args = args_check(c);
  if (!args) return {};
  if (c.comm->async_error) return {true, ncclSuccess, ""};
  return *args;
}

// Runs `c` through braid and checks its answer; returns whether all was as expected.
bool run_and_check(const Call& c) {
  const Expected want = expected(c);
  const size_t before = fake_nccl_call_count();
  if (c.in_group && ncclGroupStart() != ncclSuccess) {
    ADD_FAILURE() << "ncclGroupStart failed before " << describe(c);
    return false;
  }
  const ncclResult_t got = invoke(c);
  const std::string last_error = ncclGetLastError(comm_of(c));
  if (c.in_group && ncclGroupEnd() != ncclSuccess) {
    ADD_FAILURE() << "ncclGroupEnd failed after " << describe(c);
    return false;
  }
  const size_t reached = fake_nccl_call_count() - before;
  const bool refused_by_braid = !want.nccl_answers && want.result != ncclSuccess;
  bool ok = true;
  const auto fail = [&](const std::string& what) {
    ADD_FAILURE() << describe(c) << ": " << what;
    ok = false;
  };
  if (got != want.result)
    fail("returned " + std::to_string(got) + ", NCCL returns " + std::to_string(want.result) + " (" + want.text + ")");
  if (refused_by_braid && last_error != want.text)
    fail("ncclGetLastError is \"" + last_error + "\", NCCL's is \"" + want.text + "\"");
  // A refused call reaches NCCL only inside a group, whose error NCCL must record.
  const size_t want_reached = refused_by_braid && !c.in_group ? 0 : 1;
  if (reached != want_reached) {
    fail("reached NCCL " + std::to_string(reached) + " times, expected " + std::to_string(want_reached));
  } else if (reached == 1) {
    const FakeNcclCall r = fake_nccl_call(before);
    if (std::string(r.api) != api_name(c.api) || r.sendbuff != recorded_send(c) || r.recvbuff != recorded_recv(c) ||
        r.count != c.count || r.datatype != c.datatype || r.op != c.op || r.root != c.root || r.comm != comm_of(c) ||
        r.stream != kStream)
      fail(std::string("reached NCCL changed: ") + r.api + " count " + std::to_string(r.count) + " type " +
           std::to_string(r.datatype) + " op " + std::to_string(r.op) + " root " + std::to_string(r.root));
  }
  return ok;
}

// Communicators of the fake NCCL, made through braid (which records them), once per process.
struct World {
  CommModel two;          // 2 ranks, rank 0, with PreMulSum operators
  CommModel four;         // 4 ranks, rank 3
  CommModel nonblocking;  // 2 ranks, made with config.blocking = 0
  CommModel revoked;      // 2 ranks, revoked
  CommModel broken;       // 2 ranks, with an asynchronous error
  int stale_op = -1;      // destroyed on `two`
  float scalar = 2.0f;
};

void make_comm(CommModel& model, const char* name, int nranks, int rank) {
  model.name = name;
  model.nranks = nranks;
  ncclUniqueId id{};
  ASSERT_EQ(ncclCommInitRank(&model.comm, nranks, id, rank), ncclSuccess);
}

int make_op(CommModel& model, int datatype, void* scalar, ncclScalarResidence_t residence) {
  ncclRedOp_t op{};
  EXPECT_EQ(ncclRedOpCreatePreMulSum(&op, scalar, static_cast<ncclDataType_t>(datatype), residence, model.comm),
            ncclSuccess);
  model.live_ops[static_cast<int>(op)] = datatype;
  return static_cast<int>(op);
}

void destroy_op(CommModel& model, int op) {
  EXPECT_EQ(ncclRedOpDestroy(static_cast<ncclRedOp_t>(op), model.comm), ncclSuccess);
  model.live_ops.erase(op);
}

World& world() {
  static World* made = [] {
    EXPECT_TRUE(kFakeNcclChosen);
    auto* w = new World;
    make_comm(w->two, "two", 2, 0);
    make_comm(w->four, "four", 4, 3);
    make_comm(w->revoked, "revoked", 2, 1);
    make_comm(w->broken, "broken", 2, 0);
    w->nonblocking.name = "nonblocking";
    w->nonblocking.nranks = 2;
    w->nonblocking.blocking = false;
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    ncclUniqueId id{};
    EXPECT_EQ(ncclCommInitRankConfig(&w->nonblocking.comm, 2, id, 0, &config), ncclInProgress);
    EXPECT_EQ(ncclCommRevoke(w->revoked.comm, NCCL_REVOKE_DEFAULT), ncclSuccess);
    w->revoked.revoked = true;
    fake_nccl_set_async_error(w->broken.comm, ncclRemoteError);
    w->broken.async_error = true;
    make_op(w->two, ncclFloat32, &w->scalar, ncclScalarHostImmediate);
    make_op(w->two, ncclFloat16, &w->scalar, ncclScalarDevice);  // NCCL takes any pointer here
    w->stale_op = make_op(w->two, ncclInt32, &w->scalar, ncclScalarHostImmediate);
    destroy_op(w->two, w->stale_op);
    make_op(w->four, ncclInt32, &w->scalar, ncclScalarHostImmediate);
    return w;
  }();
  return *made;
}

// Stand-ins for device buffers: the fake never touches them, and braid splits nothing here.
char g_send_buffer[64];
char g_recv_buffer[64];

// Values to draw from: every edge NCCL's checks have, and ordinary ones.
struct Pools {
  std::vector<const CommModel*> comms;
  std::vector<const void*> sends;
  std::vector<void*> recvs;
  std::vector<size_t> counts{0, 1, 7, size_t{1} << 20, size_t{64} << 20, size_t{1} << 40, SIZE_MAX / 4 + 1, SIZE_MAX};
  std::vector<int> datatypes{-1, INT_MIN, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, ncclNumTypes, 13, 99, INT_MAX};
  std::vector<int> ops{-1, INT_MIN, ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg, ncclNumOps, ncclNumOps + 1,
                       ncclNumOps + 2, 1000, 1005, INT_MAX};
  std::vector<int> roots{-1, 0, 1, 2, 3, 4, 7, 99, INT_MIN, INT_MAX};
};

Pools pools(const World& w) {
  Pools p;
  p.comms = {nullptr, &w.two, &w.two, &w.two, &w.four, &w.four, &w.nonblocking, &w.revoked, &w.broken};
  p.sends = {nullptr, g_send_buffer, g_send_buffer};
  p.recvs = {nullptr, g_recv_buffer, g_recv_buffer};
  for (const auto& [op, type] : w.two.live_ops) p.ops.push_back(op);
  for (const auto& [op, type] : w.four.live_ops) p.ops.push_back(op);
  p.ops.push_back(w.stale_op);
  return p;
}

template <typename T>
const T& pick(std::mt19937& rng, const std::vector<T>& values) {
  return values[rng() % values.size()];
}

Call random_call(std::mt19937& rng, const Pools& p, Api api) {
  Call c;
  c.api = api;
  c.comm = pick(rng, p.comms);
  c.send = pick(rng, p.sends);
  c.recv = pick(rng, p.recvs);
  c.count = pick(rng, p.counts);
  c.datatype = pick(rng, p.datatypes);
  if (takes_op(api)) c.op = pick(rng, p.ops);
  if (takes_root(api)) c.root = pick(rng, p.roots);
  c.in_group = rng() % 8 == 0;
  return c;
}

// A valid call of `api` on `comm`.
Call valid_call(Api api, const CommModel& comm) {
  Call c;
  c.api = api;
  c.comm = &comm;
  c.send = g_send_buffer;
  c.recv = g_recv_buffer;
  c.count = size_t{64} << 20;  // 256 MB of floats: a call braid would split on GPUs
  c.root = takes_root(api) ? comm.nranks - 1 : 0;
  return c;
}

// Runs a copy of `base` for each of `values`, set into it by `set`; returns the failures.
template <typename Values, typename Set>
int each(const Call& base, const Values& values, Set set) {
  int failures = 0;
  for (const auto& value : values) {
    Call c = base;
    set(c, value);
    failures += !run_and_check(c);
  }
  return failures;
}

// Every edge value of each argument alone, the others valid, on every communicator; buffers in
// and out of groups, and each operator with several types, empty and not.
int fuzz_edges(const World& w) {
  const Pools p = pools(w);
  const std::vector<size_t> empty_or_not{0, 1};
  int failures = 0;
  for (Api api : kApis) {
    for (const CommModel* comm : p.comms) {
      Call c = valid_call(api, comm ? *comm : w.two);
      c.comm = comm;
      failures += !run_and_check(c);
      failures += each(c, p.datatypes, [](Call& x, int type) { x.datatype = type; });
      failures += each(c, p.counts, [](Call& x, size_t count) { x.count = count; });
      if (takes_root(api)) failures += each(c, p.roots, [](Call& x, int root) { x.root = root; });
      for (bool in_group : {false, true}) {
        for (const void* send : p.sends) {
          Call b = c;
          b.send = send;
          b.in_group = in_group;
          failures += each(b, p.recvs, [](Call& x, void* recv) { x.recv = recv; });
        }
      }
      if (!takes_op(api)) continue;
      for (int op : p.ops) {
        for (int type : {ncclFloat32, ncclFloat16, ncclInt32, ncclFloat64}) {
          Call o = c;
          o.op = op;
          o.datatype = type;
          failures += each(o, empty_or_not, [](Call& x, size_t count) { x.count = count; });
        }
      }
    }
  }
  return failures;
}

int fuzz_random(const World& w, std::mt19937& rng, int calls_per_api) {
  const Pools p = pools(w);
  int failures = 0;
  for (Api api : kApis)
    for (int i = 0; i < calls_per_api && failures < 50; ++i) failures += !run_and_check(random_call(rng, p, api));
  return failures;
}

TEST(ShimArgumentChecks, CallsReachTheFakeNccl) {
  world();
  int version = 0;
  ASSERT_EQ(ncclGetVersion(&version), ncclSuccess);
  EXPECT_EQ(version, 22899) << "libbraid.so did not load the fake NCCL (BRAID_NCCL_LIBRARY=" BRAID_FAKE_NCCL_PATH ")";
}

// The user report: 256 MB AllReduces with data type 99 or -1 on 2 ranks threw std::out_of_range
// through the C ABI (braid counted the call's bytes before anything checked the type).
TEST(ShimArgumentChecks, AllReduceWithAnInvalidTypeIsRefusedLikeNccl) {
  World& w = world();
  for (int type : {99, -1}) {
    Call c = valid_call(Api::AllReduce, w.two);
    c.datatype = type;
    EXPECT_TRUE(run_and_check(c));
    EXPECT_EQ(std::string(ncclGetLastError(nullptr)), "AllReduce : invalid type " + std::to_string(type));
  }
}

// The user report: rooted collectives with a root out of range were refused only after braid's own
// share ran; now they are refused before anything reaches NCCL or braid's path.
TEST(ShimArgumentChecks, RootsOutOfRangeAreRefusedBeforeAnyWork) {
  World& w = world();
  for (const auto& [api, root] : std::vector<std::pair<Api, int>>{
           {Api::Broadcast, 7}, {Api::Broadcast, -1}, {Api::Bcast, 2}, {Api::Reduce, 99}, {Api::Send, 2}}) {
    Call c = valid_call(api, w.two);
    c.root = root;
    EXPECT_TRUE(run_and_check(c));
  }
  Call c = valid_call(Api::Reduce, w.two);
  c.root = 99;
  EXPECT_EQ(invoke(c), ncclInvalidArgument);
  EXPECT_STREQ(ncclGetLastError(nullptr), "Reduce : invalid root 99 (root should be in the 0..2 range)");
}

// ArgsCheck's order decides which text a call with several wrong arguments gets.
TEST(ShimArgumentChecks, TheFirstWrongArgumentInNcclsOrderIsNamed) {
  World& w = world();
  Call c = valid_call(Api::Reduce, w.two);
  c.root = 5;
  c.datatype = 99;
  c.op = -3;
  EXPECT_EQ(invoke(c), ncclInvalidArgument);
  EXPECT_STREQ(ncclGetLastError(nullptr), "Reduce : invalid root 5 (root should be in the 0..2 range)");
  c.root = 0;
  EXPECT_EQ(invoke(c), ncclInvalidArgument);
  EXPECT_STREQ(ncclGetLastError(nullptr), "Reduce : invalid type 99");
  c.datatype = ncclFloat32;
  EXPECT_EQ(invoke(c), ncclInvalidArgument);
  EXPECT_STREQ(ncclGetLastError(nullptr), "Reduce : invalid reduction operation -3");
  c.comm = nullptr;
  EXPECT_EQ(invoke(c), ncclInvalidArgument);
  EXPECT_STREQ(ncclGetLastError(nullptr), "Reduce : comm argument is NULL");
}

TEST(ShimArgumentChecks, FuzzEveryEdgeAndRandomCalls) {
  World& w = world();
  std::mt19937 rng(20251114);
  EXPECT_EQ(fuzz_edges(w), 0);
  EXPECT_EQ(fuzz_random(w, rng, 1500), 0);

  // A destroyed operator's value, handed out again by the next create, is live again, for its new
  // type; destroyed once more, it is refused again.
  const int reused = make_op(w.two, ncclFloat64, &w.scalar, ncclScalarHostImmediate);
  EXPECT_EQ(reused, w.stale_op) << "the fake NCCL hands destroyed operator values out again, as NCCL does";
  EXPECT_EQ(fuzz_random(w, rng, 1500), 0);
  Call c = valid_call(Api::AllReduce, w.two);
  c.op = reused;
  c.datatype = ncclFloat64;
  EXPECT_TRUE(run_and_check(c));
  c.datatype = ncclInt32;  // the type the value's first operator was made for
  EXPECT_TRUE(run_and_check(c));
  EXPECT_EQ(invoke(c), ncclInvalidArgument);
  destroy_op(w.two, reused);
  EXPECT_EQ(fuzz_random(w, rng, 1500), 0);
  c.datatype = ncclFloat64;
  EXPECT_TRUE(run_and_check(c));
  EXPECT_STREQ(ncclGetLastError(nullptr),
               ("AllReduce : reduction operation " + std::to_string(reused) + " unknown to this communicator").c_str());
}

// Valid calls after refused ones still reach NCCL, unchanged, on every communicator.
TEST(ShimArgumentChecks, ValidCallsAfterRefusedOnesReachNccl) {
  World& w = world();
  for (Api api : kApis) {
    for (const CommModel* comm : {&w.two, &w.four, &w.nonblocking}) {
      Call bad = valid_call(api, *comm);
      bad.datatype = -1;
      run_and_check(bad);
      const size_t before = fake_nccl_call_count();
      EXPECT_TRUE(run_and_check(valid_call(api, *comm)));
      EXPECT_EQ(fake_nccl_call_count(), before + 1);
    }
  }
}

// A refused call inside a group still goes to NCCL, so that NCCL's group records the error and its
// ncclGroupEnd fails (the fake records no such error; the real NCCL does).
TEST(ShimArgumentChecks, InsideAGroupARefusedCallStillReachesNccl) {
  World& w = world();
  Call c = valid_call(Api::AllReduce, w.two);
  c.datatype = 99;
  c.in_group = true;
  EXPECT_TRUE(run_and_check(c));
}

// ---- no exception crosses the C ABI ----

// NCCL's queries on a non-blocking communicator call the public ncclCommGetAsyncError, which the
// drop-in exports too: braid's ncclCommGetAsyncError asks NCCL for the communicator's device, NCCL
// asks braid's ncclCommGetAsyncError again... That nested call must go straight to NCCL (under
// PyTorch with TORCH_NCCL_USE_COMM_NONBLOCKING=1 it recursed until the stack overflowed).
TEST(ShimExportGuard, NcclCallingBackIntoTheDropInDoesNotRecurse) {
  World& w = world();
  ncclResult_t async = ncclInProgress;
  ASSERT_EQ(ncclCommGetAsyncError(w.nonblocking.comm, &async), ncclSuccess);
  EXPECT_EQ(async, ncclSuccess);
  int device = -1, rank = -1, count = -1;
  EXPECT_EQ(ncclCommCuDevice(w.nonblocking.comm, &device), ncclSuccess);
  EXPECT_EQ(ncclCommUserRank(w.nonblocking.comm, &rank), ncclSuccess);
  EXPECT_EQ(ncclCommCount(w.nonblocking.comm, &count), ncclSuccess);
  EXPECT_EQ(rank, 0);
  EXPECT_EQ(count, 2);
  // A collective on it after that reaches NCCL once.
  const size_t before = fake_nccl_call_count();
  EXPECT_EQ(ncclAllReduce(g_send_buffer, g_send_buffer, 16, ncclFloat32, ncclSum, w.nonblocking.comm, kStream), ncclSuccess);
  EXPECT_EQ(fake_nccl_call_count(), before + 1);
}

TEST(ShimExportGuard, AnExceptionInsideACallBecomesAnInternalError) {
  World& w = world();
  fake_nccl_throw_next("the fake NCCL threw", true);
  const Call c = valid_call(Api::AllReduce, w.two);
  EXPECT_EQ(invoke(c), ncclInternalError);
  const std::string text = ncclGetLastError(nullptr);
  EXPECT_NE(text.find("ncclAllReduce"), std::string::npos) << text;
  EXPECT_NE(text.find("the fake NCCL threw"), std::string::npos) << text;

  fake_nccl_throw_next("", false);
  EXPECT_EQ(ncclSend(g_send_buffer, 1, ncclFloat32, 1, w.two.comm, kStream), ncclInternalError);
  EXPECT_NE(std::string(ncclGetLastError(nullptr)).find("ncclSend"), std::string::npos);

  fake_nccl_throw_next("in group start", true);
  EXPECT_EQ(ncclGroupStart(), ncclInternalError);
  fake_nccl_throw_next("in init", true);
  ncclComm_t comm = nullptr;
  ncclUniqueId id{};
  EXPECT_EQ(ncclCommInitRank(&comm, 2, id, 0), ncclInternalError);
  EXPECT_NE(std::string(ncclGetLastError(nullptr)).find("ncclCommInitRank: internal error in braid: in init"),
            std::string::npos)
      << ncclGetLastError(nullptr);
  // Valid calls go on working.
  EXPECT_TRUE(run_and_check(c));
}

TEST(ShimExportGuard, FunctionsReturningTextOrNothingFallBack) {
  world();
  fake_nccl_throw_next("in error string", true);
  const char* text = ncclGetErrorString(ncclInvalidArgument);
  ASSERT_NE(text, nullptr);
  EXPECT_NE(std::string(text).find("invalid argument"), std::string::npos) << text;

  int version = 0;
  ASSERT_EQ(ncclGetVersion(&version), ncclSuccess);  // NCCL's last error is the latest again
  fake_nccl_throw_next("in last error", true);
  const char* last = ncclGetLastError(nullptr);
  ASSERT_NE(last, nullptr);
  EXPECT_NE(std::string(last).find("ncclGetLastError: internal error in braid: in last error"), std::string::npos)
      << last;

  fake_nccl_throw_next("in reset", true);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  ncclResetDebugInit();
#pragma GCC diagnostic pop
  EXPECT_NE(std::string(ncclGetLastError(nullptr)).find("in reset"), std::string::npos);
}

}  // namespace
