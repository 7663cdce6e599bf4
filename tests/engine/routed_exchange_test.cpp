// The routed all-to-allv (route/exchange_plan.h, engine/routed_exchange.h) on the CPU backend,
// 3 to 8 ranks as threads and as forked processes, on NVLink meshes where skewed matrices make
// the router relay: every received byte is compared with a reference written apart from the
// plan (its own displacements, its own fill).
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

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

// Everything every rank touches, in one MAP_SHARED mapping made before any fork, so that the
// same addresses are every rank's buffers in threads and in processes alike.
struct SharedExchange {
  explicit SharedExchange(const route::ExchangePlan& plan) {
    const auto& l = plan.layout;
    const size_t n = size_t(l.ranks);
    size_t total = (2 * plan.transfers.size() + n) * sizeof(std::atomic<uint64_t>) + n * sizeof(int);
    for (size_t r = 0; r < n; ++r) total += l.send_bytes(int(r)) + l.recv_bytes(int(r)) + plan.scratch_bytes[r] + 3 * 128;  // take() pads each to 64 and adds 64
    bytes = total;
    base = static_cast<char*>(mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
    char* p = base;
    signals.ready = new (p) std::atomic<uint64_t>[n]();
    p += n * sizeof(std::atomic<uint64_t>);
    signals.relayed = new (p) std::atomic<uint64_t>[plan.transfers.size()]();
    p += plan.transfers.size() * sizeof(std::atomic<uint64_t>);
    signals.landed = new (p) std::atomic<uint64_t>[plan.transfers.size()]();
    p += plan.transfers.size() * sizeof(std::atomic<uint64_t>);
    results = reinterpret_cast<int*>(p);
    p += n * sizeof(int);
    auto take = [&](size_t size) {
      char* q = p;
      p += (size + 63) / 64 * 64 + 64;
      return q;
    };
    for (size_t r = 0; r < n; ++r) {
      buffers.send.push_back(take(l.send_bytes(int(r))));
      buffers.recv.push_back(take(l.recv_bytes(int(r))));
      buffers.scratch.push_back(take(plan.scratch_bytes[r]));
    }
  }
  ~SharedExchange() { munmap(base, bytes); }
  char* base = nullptr;
  size_t bytes = 0;
  engine::ExchangeBuffers buffers;
  engine::ExchangeSignals signals;
  int* results = nullptr;
};

enum class Mode { Threads, Processes };

// Runs the exchange `epochs` times on every rank; returns each rank's result.
std::vector<Result> run_all(const route::ExchangePlan& plan, SharedExchange& shared, Mode mode, int epochs) {
  const int n = plan.layout.ranks;
  auto body = [&](int rank) {
    device::CpuBackend backend;
    // The signals live in this mapping: register it, as a GPU needs its signal memory mapped.
    if (backend.register_host(shared.base, shared.bytes) != Result::Success) return Result::SystemError;
    for (int e = 1; e <= epochs; ++e) {
      // Slices of 4 KiB: relayed ranges (up to ~100 KiB here) move in many slices.
      const Result r = engine::run_exchange(plan, rank, shared.buffers, shared.signals, uint64_t(e), &backend, 4096, 20.0);
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

void check_case(int n, const Case& c, Mode mode) {
  SCOPED_TRACE(std::to_string(n) + " ranks, " + c.name + (mode == Mode::Threads ? ", threads" : ", processes"));
  route::Router router;
  ASSERT_EQ(router.init(route::testing::mesh(n)), Result::Success) << last_error();
  route::ExchangeLayout layout;
  layout.ranks = n;
  layout.element_bytes = sizeof(uint32_t);
  layout.counts = counts_of(c.traffic, 40000);
  route::Traffic bytes(n);
  for (size_t i = 0; i < bytes.bytes.size(); ++i) bytes.bytes[i] = double(layout.counts[i] * layout.element_bytes);
  route::Routing routing;
  ASSERT_EQ(router.solve(bytes, &routing), Result::Success);
  route::ExchangePlan plan;
  ASSERT_EQ(route::build_exchange_plan(router, routing, layout, {.min_range_bytes = 256}, &plan), Result::Success) << last_error();
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
    auto* send = static_cast<uint32_t*>(const_cast<void*>(shared.buffers.send[size_t(s)]));
    size_t at = 0;
    for (int d = 0; d < n; ++d)
      for (size_t i = 0; i < layout.counts[size_t(s * n + d)]; ++i) send[at++] = element(s, d, i);
  }
  for (int d = 0; d < n; ++d)
    for (int s = 0; s < n; ++s)
      for (size_t i = 0; i < layout.counts[size_t(s * n + d)]; ++i) expected[size_t(d)].push_back(element(s, d, i));
  for (int d = 0; d < n; ++d) std::memset(shared.buffers.recv[size_t(d)], 0xab, expected[size_t(d)].size() * 4);

  const std::vector<Result> results = run_all(plan, shared, mode, 2);
  for (int r = 0; r < n; ++r) ASSERT_EQ(results[size_t(r)], Result::Success) << "rank " << r;
  for (int d = 0; d < n; ++d) {
    const auto* got = static_cast<const uint32_t*>(shared.buffers.recv[size_t(d)]);
    for (size_t i = 0; i < expected[size_t(d)].size(); ++i)
      ASSERT_EQ(got[i], expected[size_t(d)][i]) << "rank " << d << " element " << i;
  }
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
