// The routed all-to-allv (route/exchange_plan.h, engine/routed_exchange.h) on the CPU backend,
// 3 to 8 ranks as threads and as forked processes, on NVLink meshes where skewed matrices make
// the router relay: every received byte is compared with a reference written apart from the
// plan (its own displacements, its own fill).
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "../route/common.h"
#include "device/cpu_backend.h"
#include "engine/routed_exchange.h"
#include "route/exchange_plan.h"
#include "route/router.h"

namespace braid {
namespace {

// The element rank s sends rank d at index i (4-byte elements).
uint32_t element(int s, int d, size_t i) { return uint32_t(s) * 2654435761u ^ uint32_t(d) * 40503u ^ uint32_t(i * 2246822519u + 7); }

// Counts in elements from a byte matrix, scaled so the largest flow is about `largest` elements,
// made odd so that ranges do not fall on round sizes.
std::vector<size_t> counts_of(const route::Traffic& t, size_t largest) {
  double top = 0;
  for (double b : t.bytes) top = std::max(top, b);
  std::vector<size_t> c(t.bytes.size(), 0);
  for (size_t i = 0; i < c.size(); ++i)
    if (t.bytes[i] > 0) c[i] = size_t(t.bytes[i] / top * double(largest)) | 1;
  return c;
}

// The sizes in bytes of the flows of each pair [s * n + d], in matching order; empty: one flow
// per pair in one packed send and one packed receive buffer per rank (ncclAlltoAll's layout).
using FlowSizes = std::vector<std::vector<size_t>>;

// Everything every rank touches, in one MAP_SHARED mapping made before any fork, so that the
// same addresses are every rank's buffers in threads and in processes alike.
struct SharedExchange {
  SharedExchange(const route::ExchangePlan& plan, const FlowSizes& flows = {}) {
    const auto& l = plan.layout;
    const size_t n = size_t(l.ranks);
    size_t total = 3 * n * sizeof(std::atomic<uint64_t>) + n * sizeof(int) + 64;
    for (size_t r = 0; r < n; ++r) total += l.send_bytes(int(r)) + l.recv_bytes(int(r)) + plan.scratch_bytes[r] + 3 * 256;  // take() pads each to 64 and adds 128
    for (const auto& pair : flows) total += pair.size() * 2 * 256;
    bytes = total;
    base = static_cast<char*>(mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
    char* p = base;
    for (auto* counters : {&signals.ready, &signals.sent, &signals.forwarded})
      for (size_t r = 0; r < n; ++r) {
        counters->push_back(new (p) std::atomic<uint64_t>(0));
        p += sizeof(std::atomic<uint64_t>);
      }
    results = reinterpret_cast<int*>(p);
    p += n * sizeof(int);
    // Odd offsets (4 bytes past each 64): copies must not rely on aligned buffers.
    auto take = [&](size_t size) {
      char* q = p + 4;
      p += (size + 63) / 64 * 64 + 128;
      return q;
    };
    std::vector<void*> scratch;
    for (size_t r = 0; r < n; ++r) scratch.push_back(take(plan.scratch_bytes[r]));
    if (flows.empty()) {
      for (size_t r = 0; r < n; ++r) {
        send_base.push_back(take(l.send_bytes(int(r))));
        recv_base.push_back(take(l.recv_bytes(int(r))));
      }
      buffers = engine::packed_buffers(l, send_base, recv_base, scratch);
      return;
    }
    // Each flow at its own place, the receive buffers in the reverse order of the sends: nothing
    // may assume that a pair's flows sit one after another.
    buffers.send.resize(n * n);
    buffers.recv.resize(n * n);
    buffers.scratch = scratch;
    for (size_t pair = 0; pair < n * n; ++pair)
      for (size_t size : flows[pair]) buffers.send[pair].push_back({take(size), size});
    for (size_t pair = n * n; pair-- > 0;) {
      buffers.recv[pair].resize(flows[pair].size());
      for (size_t k = flows[pair].size(); k-- > 0;) buffers.recv[pair][k] = {take(flows[pair][k]), flows[pair][k]};
    }
  }
  ~SharedExchange() { munmap(base, bytes); }
  char* base = nullptr;
  size_t bytes = 0;
  std::vector<const void*> send_base;
  std::vector<void*> recv_base;
  engine::ExchangeBuffers buffers;
  engine::ExchangeSignals signals;
  int* results = nullptr;
};

enum class Mode { Threads, Processes };

// Runs the exchange `epochs` times on every rank; returns each rank's result.
// With Completion::QueuesWait (as on GPUs) the rank then waits for its two queues' ends, as a
// user's stream joined to them would.
std::vector<Result> run_all(const route::ExchangePlan& plan, SharedExchange& shared, Mode mode, int epochs,
                            engine::Completion completion = engine::Completion::HostWaits) {
  const int n = plan.layout.ranks;
  auto body = [&](int rank) {
    device::CpuBackend backend;
    // The signals live in this mapping: register it, as a GPU needs its signal memory mapped.
    if (backend.register_host(shared.base, shared.bytes) != Result::Success) return Result::SystemError;
    for (int e = 1; e <= epochs; ++e) {
      // Slices of 4 KiB: relayed ranges (up to ~100 KiB here) move in many slices.
      Result r = engine::run_exchange(plan, rank, shared.buffers, shared.signals, uint64_t(e), &backend, 4096, 20.0, completion);
      if (r == Result::Success && completion == engine::Completion::QueuesWait) {
        std::atomic<uint64_t> ends[2] = {0, 0};  // signal memory is registered memory
        if (backend.register_host(ends, sizeof ends) != Result::Success) return Result::SystemError;
        for (int q : {0, 1})
          if (backend.raise(q == 0 ? device::kQueueD2H : device::kQueueH2D, {&ends[q], 1}) != Result::Success)
            return Result::InternalError;
        while (ends[0].load() == 0 || ends[1].load() == 0) std::this_thread::yield();
        backend.unregister_host(ends);
      }
      if (r != Result::Success) {
        std::fprintf(stderr, "rank %d: %s\n", rank, last_error());
        return r;
      }
    }
    return Result::Success;
  };
  if (mode == Mode::Threads) {
    std::vector<std::thread> threads;
    for (int r = 0; r < n; ++r) threads.emplace_back([&, r] { shared.results[r] = int(body(r)); });
    for (auto& t : threads) t.join();
  } else {
    std::vector<pid_t> pids;
    for (int r = 0; r < n; ++r) {
      const pid_t pid = fork();
      if (pid == 0) {
        shared.results[r] = int(body(r));
        _exit(0);
      }
      pids.push_back(pid);
    }
    for (pid_t pid : pids) waitpid(pid, nullptr, 0);
  }
  std::vector<Result> out;
  for (int r = 0; r < n; ++r) out.push_back(Result(shared.results[r]));
  return out;
}

struct Case {
  std::string name;
  route::Traffic traffic;
};

std::vector<Case> cases(int n) {
  route::Traffic hot_pair(n);
  hot_pair.at(0, n - 1) = 1;
  for (int s = 0; s < n; ++s)
    for (int d = 0; d < n; ++d)
      if (s != d && !(s == 0 && d == n - 1)) hot_pair.at(s, d) = 0.02;
  return {{"zipf 1.2", route::zipf(n, 3, 1.2)},
          {"zipf 2.0", route::zipf(n, 4, 2.0)},
          {"hot expert", route::one_hot_expert(n, n / 2)},
          {"permutation", route::permutation(n, 5)},
          {"hot pair", hot_pair}};
}

// `layout` routed on an n-GPU NVLink mesh and cut into a plan (ranges from 256 bytes).
void plan_on_mesh(const route::ExchangeLayout& layout, route::ExchangePlan* plan) {
  route::Router router;
  ASSERT_EQ(router.init(route::testing::mesh(layout.ranks)), Result::Success) << last_error();
  route::Routing routing;
  ASSERT_EQ(route::route_exchange(router, layout, {.min_range_bytes = 256}, &routing, plan), Result::Success)
      << last_error();
}

void check_case(int n, const Case& c, Mode mode) {
  SCOPED_TRACE(std::to_string(n) + " ranks, " + c.name + (mode == Mode::Threads ? ", threads" : ", processes"));
  const route::ExchangeLayout layout{n, sizeof(uint32_t), counts_of(c.traffic, 40000)};
  route::ExchangePlan plan;
  ASSERT_NO_FATAL_FAILURE(plan_on_mesh(layout, &plan));
  size_t relayed = 0;
  for (const route::Transfer& t : plan.transfers) relayed += t.via >= 0 ? t.bytes : 0;
  // A hot pair or a permutation leaves links idle that relays use (a hot receiver does not:
  // its ingress links are all busy already).
  if (c.name == "hot pair" || c.name == "permutation") {
    EXPECT_GT(relayed, 0u) << "relays unused";
  }

  SharedExchange shared(plan);
  // The reference, apart from the plan: its own displacements and fill.
  std::vector<std::vector<uint32_t>> expected(static_cast<size_t>(n));
  for (int s = 0; s < n; ++s) {
    auto* send = static_cast<uint32_t*>(const_cast<void*>(shared.send_base[size_t(s)]));
    size_t at = 0;
    for (int d = 0; d < n; ++d)
      for (size_t i = 0; i < layout.counts[size_t(s * n + d)]; ++i) send[at++] = element(s, d, i);
  }
  for (int d = 0; d < n; ++d)
    for (int s = 0; s < n; ++s)
      for (size_t i = 0; i < layout.counts[size_t(s * n + d)]; ++i) expected[size_t(d)].push_back(element(s, d, i));
  for (int d = 0; d < n; ++d) std::memset(shared.recv_base[size_t(d)], 0xab, expected[size_t(d)].size() * 4);

  const std::vector<Result> results = run_all(plan, shared, mode, 2);
  for (int r = 0; r < n; ++r) ASSERT_EQ(results[size_t(r)], Result::Success) << "rank " << r;
  for (int d = 0; d < n; ++d) {
    const auto* got = static_cast<const uint32_t*>(shared.recv_base[size_t(d)]);
    for (size_t i = 0; i < expected[size_t(d)].size(); ++i)
      ASSERT_EQ(got[i], expected[size_t(d)][i]) << "rank " << d << " element " << i;
  }
}

// Byte i of the k-th flow rank s sends rank d (a send/recv group: any sizes, no element type).
uint8_t flow_byte(int s, int d, size_t k, size_t i) { return uint8_t((element(s, d, i) >> 8) + k * 77); }

// A pair's block cut into flows as a group of sends would: one to three flows of odd sizes, some
// of them empty (count 0 calls still match).
std::vector<size_t> cut_into_flows(size_t bytes, int s, int d) {
  const int pieces = 1 + (s + 2 * d) % 3;
  std::vector<size_t> sizes;
  if ((s + d) % 4 == 0) sizes.push_back(0);
  size_t left = bytes;
  for (int k = 1; k < pieces; ++k) {
    const size_t part = left / size_t(pieces - k + 1) + size_t(k);  // not a multiple of anything
    sizes.push_back(std::min(part, left));
    left -= sizes.back();
  }
  sizes.push_back(left);
  return sizes;
}

// Every flow's send buffer filled with its own bytes, every receive buffer with 0xab.
void fill_flows(SharedExchange& shared, const FlowSizes& flows, int n) {
  for (size_t pair = 0; pair < flows.size(); ++pair)
    for (size_t k = 0; k < flows[pair].size(); ++k) {
      auto* out = static_cast<uint8_t*>(shared.buffers.send[pair][k].data);
      for (size_t i = 0; i < flows[pair][k]; ++i) out[i] = flow_byte(int(pair) / n, int(pair) % n, k, i);
      std::memset(shared.buffers.recv[pair][k].data, 0xab, flows[pair][k]);
    }
}

// Every flow's receive buffer holds what the matching send held.
void expect_flows(const SharedExchange& shared, const FlowSizes& flows, int n) {
  for (size_t pair = 0; pair < flows.size(); ++pair)
    for (size_t k = 0; k < flows[pair].size(); ++k) {
      const auto* got = static_cast<const uint8_t*>(shared.buffers.recv[pair][k].data);
      for (size_t i = 0; i < flows[pair][k]; ++i)
        ASSERT_EQ(got[i], flow_byte(int(pair) / n, int(pair) % n, k, i))
            << int(pair) / n << " -> " << int(pair) % n << " flow " << k << " byte " << i;
    }
}

// Flows at their own pointers, several per pair: the plan cuts each pair's block (its flows one
// after another) and the executor finds every range's bytes in the flows' own buffers.
void check_flows_case(int n, const Case& c, Mode mode, engine::Completion completion = engine::Completion::HostWaits) {
  SCOPED_TRACE(std::to_string(n) + " ranks, own pointers, " + c.name + (mode == Mode::Threads ? ", threads" : ", processes") +
               (completion == engine::Completion::QueuesWait ? ", waits on the queues" : ""));
  const route::ExchangeLayout layout{n, 1, counts_of(c.traffic, 150001)};
  FlowSizes flows(size_t(n) * size_t(n));
  for (int s = 0; s < n; ++s)
    for (int d = 0; d < n; ++d) flows[size_t(s * n + d)] = cut_into_flows(layout.count(s, d), s, d);
  route::ExchangePlan plan;
  ASSERT_NO_FATAL_FAILURE(plan_on_mesh(layout, &plan));
  size_t relayed = 0;
  for (const route::Transfer& t : plan.transfers) relayed += t.via >= 0 ? 1 : 0;
  EXPECT_GT(relayed, 0u) << "relays unused";

  SharedExchange shared(plan, flows);
  fill_flows(shared, flows, n);
  const std::vector<Result> results = run_all(plan, shared, mode, 3, completion);
  for (int r = 0; r < n; ++r) ASSERT_EQ(results[size_t(r)], Result::Success) << "rank " << r;
  expect_flows(shared, flows, n);
}

TEST(EngineRoutedExchange, FlowsAtTheirOwnPointersExactOnThreeToEightRanks) {
  for (int n = 3; n <= 8; ++n)
    for (const Case& c : cases(n))
      if (c.name == "hot pair" || c.name == "permutation") check_flows_case(n, c, Mode::Threads);
  for (const Case& c : cases(5))
    if (c.name == "hot pair") check_flows_case(5, c, Mode::Processes);
}

// Each rank's calls of a send/recv group for `flows`, in an order of its own: receives first,
// from the highest peer down, then sends; only the order per peer is NCCL's matching order.
std::vector<route::PeerCall> calls_of(int rank, int n, const FlowSizes& flows, const engine::ExchangeBuffers* at) {
  std::vector<route::PeerCall> calls;
  for (int s = n; s-- > 0;) {
    const size_t pair = size_t(s * n + rank);
    for (size_t k = 0; k < flows[pair].size(); ++k)
      calls.push_back({route::PeerCall::Recv, s, at ? at->recv[pair][k].data : nullptr, flows[pair][k]});
  }
  for (int d = 0; d < n; ++d) {
    const size_t pair = size_t(rank * n + d);
    for (size_t k = 0; k < flows[pair].size(); ++k)
      calls.push_back({route::PeerCall::Send, d, at ? at->send[pair][k].data : nullptr, flows[pair][k]});
  }
  return calls;
}

// The whole way behind the API, on the CPU: every rank's calls sorted into flows, the summaries
// agreed into one layout, routed, planned and run on the flows' own buffers.
TEST(EngineRoutedExchange, GroupedCallsRecognisedRoutedAndRunExactly) {
  for (int n : {3, 4, 6}) {
    SCOPED_TRACE(std::to_string(n) + " ranks");
    route::Traffic hot(n);  // a hot pair and a trickle elsewhere, self-sends included
    for (int s = 0; s < n; ++s)
      for (int d = 0; d < n; ++d) hot.at(s, d) = 0.02;
    hot.at(1, n - 1) = 1;
    const std::vector<size_t> sizes = counts_of(hot, 200003);
    FlowSizes flows(sizes.size());
    for (int s = 0; s < n; ++s)
      for (int d = 0; d < n; ++d) flows[size_t(s * n + d)] = cut_into_flows(sizes[size_t(s * n + d)], s, d);
    std::vector<uint64_t> summaries;
    for (int r = 0; r < n; ++r) {
      route::RankFlows mine;
      ASSERT_EQ(route::sort_into_flows(r, n, calls_of(r, n, flows, nullptr), &mine), Result::Success);
      const std::vector<uint64_t> words = route::summarize(mine);
      summaries.insert(summaries.end(), words.begin(), words.end());
    }
    route::ExchangeLayout layout;
    ASSERT_EQ(route::agree_on_exchange(n, summaries, &layout), Result::Success) << last_error();
    route::ExchangePlan plan;
    ASSERT_NO_FATAL_FAILURE(plan_on_mesh(layout, &plan));
    EXPECT_GT(route::relayed_ranges(plan), 0u);

    SharedExchange shared(plan, flows);
    std::vector<route::RankFlows> every_rank(static_cast<size_t>(n));
    for (int r = 0; r < n; ++r)
      ASSERT_EQ(route::sort_into_flows(r, n, calls_of(r, n, flows, &shared.buffers), &every_rank[size_t(r)]), Result::Success);
    shared.buffers = engine::grouped_buffers(every_rank, shared.buffers.scratch);
    fill_flows(shared, flows, n);
    const std::vector<Result> results = run_all(plan, shared, Mode::Threads, 2);
    for (int r = 0; r < n; ++r) ASSERT_EQ(results[size_t(r)], Result::Success) << "rank " << r;
    expect_flows(shared, flows, n);
  }
}

// As on GPUs: the completion waits go on the queues and the call returns once all is queued.
TEST(EngineRoutedExchange, CompletionOnTheQueuesIsExact) {
  for (int n : {3, 6}) check_flows_case(n, cases(n).back(), Mode::Threads, engine::Completion::QueuesWait);
}

// A rank that never enters (it died): the others end with RemoteError within their timeout, never
// a hang; what the absent rank would have sent never lands, so they must not report success.
TEST(EngineRoutedExchange, AnAbsentRankEndsThePeersWithAnErrorNotAHang) {
  const Case c = cases(4).back();  // the hot pair 0 -> 3, relayed through 1 and 2
  const route::ExchangeLayout layout{4, 1, counts_of(c.traffic, 150001)};
  route::ExchangePlan plan;
  ASSERT_NO_FATAL_FAILURE(plan_on_mesh(layout, &plan));
  SharedExchange shared(plan);
  std::vector<Result> results(3, Result::Success);
  std::vector<std::thread> threads;
  const auto start = std::chrono::steady_clock::now();
  for (int rank = 0; rank < 3; ++rank)  // rank 3 never comes
    threads.emplace_back([&, rank] {
      device::CpuBackend backend;
      if (backend.register_host(shared.base, shared.bytes) != Result::Success) return;
      results[size_t(rank)] = engine::run_exchange(plan, rank, shared.buffers, shared.signals, 1, &backend, 4096, 0.5);
    });
  for (auto& t : threads) t.join();
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (int rank = 0; rank < 3; ++rank) EXPECT_EQ(results[size_t(rank)], Result::RemoteError) << "rank " << rank;
  EXPECT_LT(waited, 10.0);
}

TEST(EngineRoutedExchange, BuffersThatDoNotHoldThePlanAreRefusedBeforeAnythingMoves) {
  route::ExchangePlan plan;
  ASSERT_NO_FATAL_FAILURE(plan_on_mesh({3, 1, std::vector<size_t>(9, 5000)}, &plan));
  FlowSizes flows(9, std::vector<size_t>{5000});
  flows[1] = {4000};  // rank 0's flow to rank 1 is short of its block
  SharedExchange shared(plan, flows);
  device::CpuBackend backend;
  EXPECT_EQ(engine::run_exchange(plan, 0, shared.buffers, shared.signals, 1, &backend, 4096, 1.0), Result::InvalidArgument);
  EXPECT_NE(std::string(last_error()).find("0 -> 1"), std::string::npos) << last_error();
  EXPECT_EQ(shared.signals.ready[0]->load(), 0u) << "rank 0 entered the exchange";
}

// ncclGather and ncclScatter as the drop-in runs them (route::gather_layout, scatter_layout):
// packed buffers, every buffer a rank does not use null (so it is never touched), root's in place
// when asked, on a mesh whose link between root and rank `thin` is a quarter as wide (relays pay).
struct Rooted {
  bool gather = true;
  int ranks = 4, root = 0;
  bool in_place = false;
  size_t count = 30001;
};

void check_rooted(const Rooted& c, Mode mode) {
  SCOPED_TRACE(std::string(c.gather ? "gather" : "scatter") + ", " + std::to_string(c.ranks) + " ranks, root " +
               std::to_string(c.root) + (c.in_place ? ", in place" : "") + ", count " + std::to_string(c.count) +
               (mode == Mode::Threads ? ", threads" : ", processes"));
  const int n = c.ranks, root = c.root, thin = (root + 1) % n;
  const route::ExchangeLayout layout = c.gather ? route::gather_layout(n, root, c.count, sizeof(uint32_t))
                                                : route::scatter_layout(n, root, c.count, sizeof(uint32_t));
  topo::Topology mesh = route::testing::mesh(n);
  for (topo::Link& link : mesh.links)
    if ((link.a == 1 + root && link.b == 1 + thin) || (link.a == 1 + thin && link.b == 1 + root))
      link.gbps_ab = link.gbps_ba = 25;
  route::Router router;
  ASSERT_EQ(router.init(mesh), Result::Success) << last_error();
  route::Routing routing;
  route::ExchangePlan plan;
  ASSERT_EQ(route::route_exchange(router, layout, {.min_range_bytes = 256}, &routing, &plan), Result::Success)
      << last_error();
  if (c.count >= 1000) {
    EXPECT_GT(route::relayed_ranges(plan), 0u) << "the thin link's flow is not relayed";
  }

  SharedExchange shared(plan);
  // Root's buffers: out of place as SharedExchange made them, or in place (gather: sendbuff =
  // recvbuff + root x count; scatter: recvbuff = sendbuff + root x count).
  const size_t block = c.count * sizeof(uint32_t);
  std::vector<const void*> sends(size_t(n), nullptr);
  std::vector<void*> recvs(size_t(n), nullptr);
  for (int r = 0; r < n; ++r) {
    if (layout.send_bytes(r) > 0) sends[size_t(r)] = shared.send_base[size_t(r)];
    if (layout.recv_bytes(r) > 0) recvs[size_t(r)] = shared.recv_base[size_t(r)];
  }
  if (c.in_place && c.gather) sends[size_t(root)] = static_cast<char*>(recvs[size_t(root)]) + root * block;
  if (c.in_place && !c.gather)
    recvs[size_t(root)] = const_cast<char*>(static_cast<const char*>(sends[size_t(root)])) + root * block;
  for (int r = 0; r < n; ++r)
    EXPECT_TRUE(route::packed_buffers_usable(layout, r, sends[size_t(r)], recvs[size_t(r)])) << "rank " << r;
  shared.buffers = engine::packed_buffers(layout, sends, recvs, shared.buffers.scratch);

  // Receive buffers first (root's in-place block is its send block), then the send blocks.
  for (int r = 0; r < n; ++r)
    if (recvs[size_t(r)] != nullptr) std::memset(recvs[size_t(r)], 0xab, layout.recv_bytes(r));
  for (int s = 0; s < n; ++s)
    for (int d = 0; d < n; ++d) {
      if (layout.count(s, d) == 0) continue;
      auto* out = reinterpret_cast<uint32_t*>(const_cast<char*>(static_cast<const char*>(sends[size_t(s)])) +
                                              layout.send_offset(s, d));
      for (size_t i = 0; i < c.count; ++i) out[i] = element(s, d, i);
    }
  const std::vector<Result> results = run_all(plan, shared, mode, 2);
  for (int r = 0; r < n; ++r) ASSERT_EQ(results[size_t(r)], Result::Success) << "rank " << r;
  // Gather: root holds rank s's block at s x count. Scatter: rank d holds root's block d.
  for (int s = 0; s < n; ++s)
    for (int d = 0; d < n; ++d) {
      if (layout.count(s, d) == 0) continue;
      const auto* got = reinterpret_cast<const uint32_t*>(static_cast<const char*>(recvs[size_t(d)]) +
                                                          (c.gather ? size_t(s) * block : 0));
      for (size_t i = 0; i < c.count; ++i) ASSERT_EQ(got[i], element(s, d, i)) << s << " -> " << d << " element " << i;
    }
}

TEST(EngineRoutedExchange, GatherAndScatterExactWithUnusedBuffersNull) {
  for (bool gather : {true, false})
    for (int n : {3, 4, 6})
      for (int root : {0, n - 1})
        for (bool in_place : {false, true}) check_rooted({gather, n, root, in_place}, Mode::Threads);
  check_rooted({true, 5, 2, true}, Mode::Processes);
  check_rooted({false, 5, 3, false}, Mode::Processes);
}

TEST(EngineRoutedExchange, GatherAndScatterOfCountZeroMoveNothing) {
  for (bool gather : {true, false}) check_rooted({gather, 4, 1, false, 0}, Mode::Threads);
  for (bool gather : {true, false}) check_rooted({gather, 3, 0, true, 0}, Mode::Threads);
}

TEST(EngineRoutedExchange, SkewedMatricesExactOnThreeToEightRanksAsThreads) {
  for (int n = 3; n <= 8; ++n)
    for (const Case& c : cases(n)) check_case(n, c, Mode::Threads);
}

TEST(EngineRoutedExchange, SkewedMatricesExactAsProcesses) {
  for (int n : {3, 5, 8})
    for (const Case& c : cases(n)) check_case(n, c, Mode::Processes);
}

}  // namespace
}  // namespace braid
