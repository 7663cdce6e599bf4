// The progress lane (multipath/progress_lane.h) on the CPU-emulated device, driven the way the
// Orchestrator drives it on a GPU: the calling thread splits each call with the split ledger,
// queues every device operation of the lane's share (engine::Communicator::queue), hands the host
// half to the lane (Communicator::complete) and queues, on its "stream" (a CpuBackend queue), a
// wait on a completion word the lane writes with a host store. The lane's thread is host-only:
// the CPU backend fails any device work it queues, so every exact result below also checks that
// rule. The NVLink share (NCCL's on a GPU) is left out, so its elements must stay untouched.
//
// Checked: results exact against a host reference for 2-4 ranks (threads and forked processes);
// the calling thread returns before the share runs; a failure at every step of a share (the
// engine's BRAID_FAULT steps, and the lane's own: before the share, before the times exchange)
// reaches every rank within the bound and releases every waiting stream; abort while a share is
// mid-transfer; several communicators from several threads of one process; one thread driving
// every rank of a communicator in groups (nccl-tests -g, ncclCommInitAll).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "../engine/harness.h"
#include "../support/log_capture.h"
#include "../support/sanitizer_suppressions.h"
#include "balance/balancer.h"
#include "common/settings.h"
#include "device/cpu_backend.h"
#include "engine/communicator.h"
#include "multipath/progress_lane.h"

namespace braid::multipath {
namespace {

// Catches hangs on a loaded two-core CI machine; far above the BRAID_TIMEOUT the cases set.
constexpr double kHangBound = 20.0;
constexpr size_t kAlignBytes = 4096;
constexpr int32_t kUntouched = -7;  // the NVLink share's elements: nobody writes them here

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Ends the test binary if a case outlives its bound (a hang must fail, not stall CI). An alarm,
// not a watchdog thread: ranks are forked from this process, and ThreadSanitizer refuses threads
// in a child forked from a multi-threaded parent. A forked child does not inherit the alarm.
class HangGuard {
 public:
  explicit HangGuard(unsigned seconds) { alarm(seconds); }
  ~HangGuard() { alarm(0); }
};

// Rank r's input element i of call `call`: small, so int32 sums over ranks are exact.
int32_t input(int rank, int call, size_t i) {
  return static_cast<int32_t>((rank + 1) * 100003 + call * 37 + static_cast<int>(i % 9973));
}

// The lane's own steps the fault cases fail (the engine's are BRAID_FAULT's).
enum class LaneFault { None, BeforeShare, BeforeTimes };

struct CpuJob final : LaneJob {
  // The share's device work, queued by the calling thread after the hand-on: shared, since the
  // lane drops a failed job while the calling thread may still issue (as the orchestrator's).
  std::shared_ptr<engine::QueuedCollective> queued = std::make_shared<engine::QueuedCollective>();
};

// The device-specific steps on the CPU: braid's engine completes the share's host half, a host
// store raises the completion word, the ranks exchange their times.
class CpuLaneSteps final : public LaneSteps {
 public:
  CpuLaneSteps(engine::Communicator& comm, std::atomic<uint64_t>* done) : comm_(comm), done_(done) {}

  // Held closed, the lane's thread waits before each share (so tests see the caller return first).
  std::atomic<bool> gate_open{true};
  LaneFault fault = LaneFault::None;
  uint64_t fault_call = 0;
  std::atomic<bool> share_started{false};

  Result run_share(LaneJob& lane_job, std::vector<double>* seconds) override {
    auto& job = static_cast<CpuJob&>(lane_job);
    while (!gate_open.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (fault == LaneFault::BeforeShare && job.ledger.call == fault_call)
      return fail(Result::InternalError, "rank %d: failure injected at step 'share'", comm_.rank());
    share_started.store(true);
    const auto t0 = std::chrono::steady_clock::now();
    BRAID_TRY(comm_.complete(*job.queued));
    const double pcie_seconds = since(t0);
    done_->store(job.ledger.call, std::memory_order_release);
    if (!job.ledger.timed) return Result::Success;
    if (fault == LaneFault::BeforeTimes && job.ledger.call == fault_call)
      return fail(Result::InternalError, "rank %d: failure injected at step 'times'", comm_.rank());
    // No NVLink path runs here: a time proportional to its share stands in for NCCL's (a pace of
    // the engine's order on this device, so a learning balancer keeps moving the cut).
    const uint64_t mine[2] = {job.ledger.dedicated_elements * kNvlinkNanosecondsPerElement,
                              static_cast<uint64_t>(pcie_seconds * 1e9)};
    std::vector<uint64_t> all;
    BRAID_TRY(comm_.exchange(mine, &all));
    seconds->resize(all.size());
    for (size_t i = 0; i < all.size(); ++i) (*seconds)[i] = static_cast<double>(all[i]) * 1e-9;
    return Result::Success;
  }
  // After a failure: the callers' streams go on, and the device work queued for later calls (which
  // waits for meetings that will not come) is dropped, by host stores as on a GPU.
  void release_waiters() override {
    done_->store(kReleasedWord);
    comm_.abort();
  }
  void abort_transfers() override { comm_.abort(); }

  static constexpr uint64_t kNvlinkNanosecondsPerElement = 100;

 private:
  engine::Communicator& comm_;
  std::atomic<uint64_t>* done_;
};

// One rank's split calls, made as Orchestrator::run makes them.
class LaneRank {
 public:
  LaneRank(engine::Communicator& comm, const char* balancer, uint64_t lag) : comm_(comm) {
    std::unique_ptr<balance::Balancer> b;
    EXPECT_EQ(balance::make_balancer(balancer, 2, 0.5, &b), Result::Success);
    ledger_ = std::make_unique<SplitLedger>(std::make_unique<balance::SplitTable>(std::move(b), kAlignBytes),
                                            comm.nranks(), lag, kAlignBytes);
    streams_.register_host(words_, sizeof(words_));
    steps_ = std::make_unique<CpuLaneSteps>(comm, &words_[0]);
    lane_ = std::make_unique<ProgressLane>(steps_.get(), ledger_.get(), true);
  }
  ~LaneRank() {
    lane_->stop();
    lane_.reset();
  }

  CpuLaneSteps& steps() { return *steps_; }
  ProgressLane& lane() { return *lane_; }
  uint64_t completion_word() const { return words_[0].load(); }
  uint64_t stream_reached() const { return words_[1].load(); }
  // Every call's PCIe share, in call order, as the ledger applied them.
  const std::vector<size_t>& applied_shares() const { return applied_; }

  // Returns once the lane has the share and the caller's stream waits for it.
  Result call(Collective c, const int32_t* send, int32_t* recv, size_t count) {
    std::string text;
    if (const Result f = lane_->failure(&text); f != Result::Success)
      return fail(f, "an earlier split call failed: %s", text.c_str());
    BRAID_TRY(lane_->apply_through(ledger_->must_apply_through(), false, applied()));
    auto job = std::make_unique<CpuJob>();
    const size_t bytes = count * sizeof(int32_t) * (c == Collective::AllGather ? static_cast<size_t>(comm_.nranks()) : 1);
    BRAID_TRY(ledger_->next(c, DataType::Int32, bytes, count, &job->ledger));
    const uint64_t number = job->ledger.call;
    if (!job->runs_on_lane()) {
      lane_->settle_at_once(std::move(job));
      return Result::Success;
    }
    // As the orchestrator: planned (host work only), handed on, then the GPU work queued, so that
    // the ranks' meeting never waits for this thread.
    if (const Result r = comm_.plan(c, send, recv, count, DataType::Int32, RedOp::Sum, 0,
                                    engine::BlockRange{job->ledger.dedicated_elements, job->ledger.pcie_elements},
                                    job->queued.get());
        r != Result::Success) {
      lane_->settle_at_once(std::move(job));
      return r;
    }
    const std::shared_ptr<engine::QueuedCollective> queued = job->queued;
    lane_->submit(std::move(job));
    if (const Result r = comm_.issue(*queued); r != Result::Success) {
      // The lane's failure released the device work (an abort) as this call was queued: its cause.
      if (const Result f = lane_->failure(&text); r == Result::RemoteError && f != Result::Success)
        return fail(f, "an earlier split call failed: %s", text.c_str());
      return r;
    }
    last_lane_call_ = number;
    // The caller's stream: waits for the lane's share, then marks the call done.
    BRAID_TRY(streams_.wait(kCallerStream, device::Signal{&words_[0], number}));
    return streams_.raise(kCallerStream, device::Signal{&words_[1], number});
  }
  Result drain() { return lane_->apply_through(ledger_->calls(), true, applied()); }
  // Whether the caller's stream got past every call it waits for within `seconds`
  // (cudaStreamSynchronize).
  bool stream_done(double seconds) const {
    const auto t0 = std::chrono::steady_clock::now();
    while (words_[1].load() < last_lane_call_) {
      if (since(t0) > seconds) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return true;
  }

 private:
  static constexpr int kCallerStream = device::kQueueCompute;
  ProgressLane::Applied applied() {
    return [this](LaneJob& job, const std::vector<double>&, double) { applied_.push_back(job.ledger.pcie_elements); };
  }

  engine::Communicator& comm_;
  std::atomic<uint64_t> words_[2] = {};  // the completion word, and how far the caller's stream got
  device::CpuBackend streams_;           // after words_: its queue threads stop before they go
  std::unique_ptr<SplitLedger> ledger_;
  std::unique_ptr<CpuLaneSteps> steps_;
  std::unique_ptr<ProgressLane> lane_;
  std::vector<size_t> applied_;  // the calling thread's
  uint64_t last_lane_call_ = 0;   // the caller's stream waits for nothing later
};

// A run of split calls and their exact check, for one rank.
struct Workload {
  int nranks;
  int calls;
  std::vector<std::vector<int32_t>> send, recv;
  std::vector<Collective> collectives;
  std::vector<size_t> counts;

  Workload(int ranks, int n, int rank) : nranks(ranks), calls(n) {
    for (int k = 0; k < calls; ++k) {
      const Collective c = k % 3 == 2 ? Collective::AllGather : Collective::AllReduce;
      // Odd counts too; large enough that FlexLink's first share (1/8) survives the 4 KiB cut.
      const size_t count = 32768 + 1024 * static_cast<size_t>(k % 4) + static_cast<size_t>(k % 5);
      collectives.push_back(c);
      counts.push_back(count);
      std::vector<int32_t> s(count);
      for (size_t i = 0; i < count; ++i) s[i] = input(rank, k, i);
      send.push_back(std::move(s));
      recv.emplace_back(c == Collective::AllGather ? count * static_cast<size_t>(nranks) : count, kUntouched);
    }
  }
  Result issue(LaneRank& lane, int k) {
    return lane.call(collectives[k], send[k].data(), recv[k].data(), counts[k]);
  }
  // Every element of the lane's range against the host reference; the rest untouched.
  bool exact(const std::vector<size_t>& shares, std::string* why) const {
    if (shares.size() != static_cast<size_t>(calls)) return *why = "not every call applied", false;
    for (int k = 0; k < calls; ++k) {
      const size_t count = counts[k];
      const size_t begin = count - shares[k];  // the lane's share is the tail of each block
      const int blocks = collectives[k] == Collective::AllGather ? nranks : 1;
      for (int b = 0; b < blocks; ++b)
        for (size_t i = 0; i < count; ++i) {
          int32_t want = kUntouched;
          if (i >= begin) {
            if (collectives[k] == Collective::AllGather) {
              want = input(b, k, i);
            } else {
              want = 0;
              for (int r = 0; r < nranks; ++r) want += input(r, k, i);
            }
          }
          const int32_t got = recv[k][static_cast<size_t>(b) * count + i];
          if (got != want) {
            *why = "call " + std::to_string(k + 1) + " block " + std::to_string(b) + " element " + std::to_string(i) +
                   ": " + std::to_string(got) + ", want " + std::to_string(want);
            return false;
          }
        }
    }
    return true;
  }
};

// What a rank reports through the harness's output bytes: exactness, and the shares it applied
// (every rank must split every call alike).
constexpr int kMaxCalls = 16;
struct Report {
  int exact = 0;
  int stream_done = 0;
  uint64_t shares[kMaxCalls] = {};
};

Result run_exact(engine::Communicator& comm, int rank, unsigned char* out, const char* balancer, int calls) {
  LaneRank lane(comm, balancer, 2);
  Workload w(comm.nranks(), calls, rank);
  for (int k = 0; k < calls; ++k) BRAID_TRY(w.issue(lane, k));
  BRAID_TRY(lane.drain());
  Report report;
  report.stream_done = lane.stream_done(kHangBound);
  std::string why;
  report.exact = w.exact(lane.applied_shares(), &why);
  if (!report.exact) std::fprintf(stderr, "rank %d: %s\n", rank, why.c_str());
  for (size_t k = 0; k < lane.applied_shares().size() && k < kMaxCalls; ++k) report.shares[k] = lane.applied_shares()[k];
  std::memcpy(out, &report, sizeof(report));
  return Result::Success;
}

void expect_exact_and_agreed(const std::vector<test::RankOutcome>& outcomes) {
  Report first;
  std::memcpy(&first, outcomes[0].output.data(), sizeof(first));
  for (size_t r = 0; r < outcomes.size(); ++r) {
    ASSERT_EQ(outcomes[r].result, Result::Success) << "rank " << r << ": " << outcomes[r].error;
    Report report;
    std::memcpy(&report, outcomes[r].output.data(), sizeof(report));
    EXPECT_TRUE(report.exact) << "rank " << r;
    EXPECT_TRUE(report.stream_done) << "rank " << r << ": its stream never got past the last call";
    for (int k = 0; k < kMaxCalls; ++k) EXPECT_EQ(report.shares[k], first.shares[k]) << "rank " << r << " call " << k + 1;
  }
  bool some_share = false;
  for (uint64_t s : first.shares) some_share |= s > 0;
  EXPECT_TRUE(some_share) << "the lane carried nothing";
}

class ProgressLaneExact : public ::testing::TestWithParam<std::tuple<int, test::Mode, const char*>> {};

std::string exact_case_name(const ::testing::TestParamInfo<ProgressLaneExact::ParamType>& info) {
  return std::to_string(std::get<0>(info.param)) + "_ranks_" + test::mode_name(std::get<1>(info.param)) + "_" +
         std::get<2>(info.param);
}

TEST_P(ProgressLaneExact, EveryRankGetsTheReferenceAndTheSameSplits) {
  const auto& [nranks, mode, balancer] = GetParam();
  HangGuard guard(60);
  const auto topo = test::load_test_topology();
  auto outcomes = test::run_ranks(mode, nranks, topo, sizeof(Report), [&](engine::Communicator& comm, int rank, unsigned char* out) {
    return run_exact(comm, rank, out, balancer, 12);
  });
  expect_exact_and_agreed(outcomes);
}

INSTANTIATE_TEST_SUITE_P(Ranks, ProgressLaneExact,
                         ::testing::Combine(::testing::Values(2, 3, 4),
                                            ::testing::Values(test::Mode::Threads, test::Mode::Processes),
                                            ::testing::Values("static", "flexlink")),
                         exact_case_name);

TEST(ProgressLane, TheCallerReturnsBeforeTheShareRuns) {
  HangGuard guard(60);
  const auto topo = test::load_test_topology();
  auto outcomes = test::run_ranks(test::Mode::Threads, 2, topo, sizeof(Report), [&](engine::Communicator& comm, int rank, unsigned char* out) {
    // The lag lets the caller run three calls ahead of the lane (beyond it, a call waits).
    LaneRank lane(comm, "static", 4);
    lane.steps().gate_open.store(false);
    Workload w(comm.nranks(), 3, rank);
    // Three calls return while the lane's thread is held before its first share.
    for (int k = 0; k < 3; ++k) BRAID_TRY(w.issue(lane, k));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const bool ran_early = lane.steps().share_started.load() || lane.lane().finished() != 0 ||
                           lane.completion_word() != 0 || lane.stream_reached() != 0;
    lane.steps().gate_open.store(true);
    BRAID_TRY(lane.drain());
    Report report;
    report.stream_done = lane.stream_done(kHangBound);
    std::string why;
    report.exact = !ran_early && w.exact(lane.applied_shares(), &why);
    if (ran_early) std::fprintf(stderr, "rank %d: the share ran before the gate opened\n", rank);
    std::memcpy(out, &report, sizeof(report));
    return Result::Success;
  });
  for (const auto& o : outcomes) {
    ASSERT_EQ(o.result, Result::Success) << o.error;
    Report report;
    std::memcpy(&report, o.output.data(), sizeof(report));
    EXPECT_TRUE(report.exact);
    EXPECT_TRUE(report.stream_done);
  }
}

// ---- failures ----

struct FaultCase {
  const char* name;
  const char* braid_fault;  // BRAID_FAULT (the engine's steps), or "" for the lane's own
  LaneFault lane_fault;
  const char* step;   // as the failing rank's error names it
  int rank;           // the failing rank
  const char* placement;
  double timeout;     // BRAID_TIMEOUT: short where only it can end the other ranks' waits
};

const FaultCase kFaults[] = {
    {"barrier", "barrier@1", LaneFault::None, "barrier", 1, "auto", 60.0},
    {"d2h", "d2h@0", LaneFault::None, "d2h", 0, "host", 60.0},
    {"h2d", "h2d@2#3", LaneFault::None, "h2d", 2, "host", 60.0},
    {"reduce", "reduce@1", LaneFault::None, "reduce", 1, "device", 60.0},
    {"copy", "copy@1#2", LaneFault::None, "copy", 1, "auto", 60.0},
    // The lane's steps outside the engine: the other ranks wait in the engine until BRAID_TIMEOUT.
    {"share", "", LaneFault::BeforeShare, "share", 2, "auto", 2.0},
    {"times", "", LaneFault::BeforeTimes, "times", 0, "auto", 2.0},
};

class ProgressLaneFaults : public ::testing::TestWithParam<std::tuple<FaultCase, test::Mode>> {};

// How gtest prints a case in its messages: its name, not the struct's bytes.
void PrintTo(const FaultCase& c, std::ostream* os) { *os << c.name; }

std::string fault_case_name(const ::testing::TestParamInfo<ProgressLaneFaults::ParamType>& info) {
  return std::string(std::get<0>(info.param).name) + "_" + test::mode_name(std::get<1>(info.param));
}

TEST_P(ProgressLaneFaults, EveryRankReturnsAnErrorWithinTheBoundAndNoStreamHangs) {
  const auto& [c, mode] = GetParam();
  HangGuard guard(60);
  setenv("BRAID_FAULT", c.braid_fault, 1);
  setenv("BRAID_REDUCE_PLACEMENT", c.placement, 1);
  setenv("BRAID_TIMEOUT", std::to_string(c.timeout).c_str(), 1);
  settings_reload();
  const auto topo = test::load_test_topology();
  const auto t0 = std::chrono::steady_clock::now();
  auto outcomes = test::run_ranks(mode, 3, topo, sizeof(Report), [&](engine::Communicator& comm, int rank, unsigned char* out) {
    LaneRank lane(comm, "static", 2);
    if (rank == c.rank) {
      lane.steps().fault = c.lane_fault;
      lane.steps().fault_call = 2;
    }
    Workload w(comm.nranks(), 6, rank);
    Result r = Result::Success;
    for (int k = 0; k < w.calls && r == Result::Success; ++k) r = w.issue(lane, k);
    if (r == Result::Success) r = lane.drain();
    Report report;
    report.stream_done = lane.stream_done(kHangBound);
    std::memcpy(out, &report, sizeof(report));
    std::string text;
    if (r == Result::Success && lane.lane().failure(&text) != Result::Success) r = fail(lane.lane().failure(nullptr), "%s", text.c_str());
    return r;
  });
  const double took = since(t0);
  unsetenv("BRAID_FAULT");
  unsetenv("BRAID_REDUCE_PLACEMENT");
  unsetenv("BRAID_TIMEOUT");
  settings_reload();

  EXPECT_LT(took, kHangBound) << c.name;
  EXPECT_NE(outcomes[c.rank].error.find(std::string("failure injected at step '") + c.step + "'"), std::string::npos)
      << outcomes[c.rank].error;
  for (int r = 0; r < 3; ++r) {
    EXPECT_NE(outcomes[r].result, Result::Success) << c.name << ": rank " << r << " did not learn of the failure";
    Report report;
    std::memcpy(&report, outcomes[r].output.data(), sizeof(report));
    EXPECT_TRUE(report.stream_done) << c.name << ": rank " << r << "'s stream still waits";
  }
}

INSTANTIATE_TEST_SUITE_P(Steps, ProgressLaneFaults,
                         ::testing::Combine(::testing::ValuesIn(kFaults),
                                            ::testing::Values(test::Mode::Threads, test::Mode::Processes)),
                         fault_case_name);

// Rank 0's lane is inside the engine, waiting for rank 1, whose lane is held: the application
// aborts rank 0 (ncclCommAbort), sees the failure (ncclCommGetAsyncError), and both ranks return.
TEST(ProgressLane, AbortWhileAShareIsMidTransfer) {
  HangGuard guard(60);
  setenv("BRAID_TIMEOUT", "60", 1);
  settings_reload();
  const auto topo = test::load_test_topology();
  std::atomic<bool> aborted{false};
  const auto t0 = std::chrono::steady_clock::now();
  auto outcomes = test::run_ranks(test::Mode::Threads, 2, topo, sizeof(Report), [&](engine::Communicator& comm, int rank, unsigned char* out) {
    LaneRank lane(comm, "static", 2);
    Workload w(comm.nranks(), 2, rank);
    if (rank == 1) lane.steps().gate_open.store(false);
    for (int k = 0; k < w.calls; ++k) BRAID_TRY(w.issue(lane, k));
    if (rank == 0) {
      while (!lane.steps().share_started.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      const auto t_abort = std::chrono::steady_clock::now();
      lane.lane().abort();
      std::string text;
      if (lane.lane().failure(&text) != Result::RemoteError || text.find("aborted") == std::string::npos)
        return fail(Result::InternalError, "no async error after abort: %s", text.c_str());
      aborted.store(true);
      const Result r = lane.drain();
      if (since(t_abort) > 2.0) return fail(Result::InternalError, "abort took %.1f s", since(t_abort));
      Report report;
      report.stream_done = lane.stream_done(kHangBound);
      std::memcpy(out, &report, sizeof(report));
      return r == Result::Success ? fail(Result::InternalError, "drain succeeded after abort") : Result::RemoteError;
    }
    while (!aborted.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    lane.steps().gate_open.store(true);
    const Result r = lane.drain();
    Report report;
    report.stream_done = lane.stream_done(kHangBound);
    std::memcpy(out, &report, sizeof(report));
    return r == Result::Success ? fail(Result::InternalError, "drain succeeded after the peer aborted") : Result::RemoteError;
  });
  const double took = since(t0);
  unsetenv("BRAID_TIMEOUT");
  settings_reload();
  EXPECT_LT(took, kHangBound);
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(outcomes[r].result, Result::RemoteError) << "rank " << r << ": " << outcomes[r].error;
    Report report;
    std::memcpy(&report, outcomes[r].output.data(), sizeof(report));
    EXPECT_TRUE(report.stream_done) << "rank " << r;
  }
}

// ---- several communicators ----

// Two communicators of two ranks each, every rank on a thread of its own, all at once (nccl-tests
// -t 2 on two communicators; each thread drives one rank).
TEST(ProgressLane, SeveralCommunicatorsFromSeveralThreads) {
  HangGuard guard(60);
  const auto topo = test::load_test_topology();
  std::vector<std::vector<test::RankOutcome>> outcomes(2);
  std::vector<std::thread> comms;
  for (int c = 0; c < 2; ++c)
    comms.emplace_back([&, c] {
      outcomes[c] = test::run_ranks(test::Mode::Threads, 2, topo, sizeof(Report),
                                    [&](engine::Communicator& comm, int rank, unsigned char* out) {
                                      return run_exact(comm, rank, out, c == 0 ? "static" : "flexlink", 10);
                                    });
    });
  for (auto& t : comms) t.join();
  for (const auto& o : outcomes) expect_exact_and_agreed(o);
}

// One thread drives every rank of a communicator: each call is issued on every rank in turn (an
// NCCL group: ncclGroupStart, one call per communicator, ncclGroupEnd), as nccl-tests -g and
// ncclCommInitAll do. The calls return at once, so no rank's call waits for another's.
TEST(ProgressLane, OneThreadDrivesEveryRankInGroups) {
  HangGuard guard(60);
  constexpr int kRanks = 3;
  const auto topo = test::load_test_topology();
  const engine::CommId id = engine::CommId::random();
  std::vector<std::unique_ptr<device::CpuBackend>> backends;
  for (int r = 0; r < kRanks; ++r) backends.push_back(std::make_unique<device::CpuBackend>());
  std::vector<std::unique_ptr<engine::Communicator>> comms(kRanks);
  {
    // Making a communicator meets the other ranks: ncclCommInitAll does it for all at once.
    std::vector<std::thread> init;
    for (int r = 0; r < kRanks; ++r)
      init.emplace_back([&, r] {
        ASSERT_EQ(engine::Communicator::create(id, r, kRanks, topo, backends[r].get(), &comms[r]), Result::Success);
      });
    for (auto& t : init) t.join();
  }
  for (const auto& c : comms) ASSERT_NE(c, nullptr);
  {
    std::vector<std::unique_ptr<LaneRank>> lanes;
    std::vector<Workload> work;
    for (int r = 0; r < kRanks; ++r) {
      lanes.push_back(std::make_unique<LaneRank>(*comms[r], "flexlink", 2));
      work.emplace_back(kRanks, 12, r);
    }
    for (int k = 0; k < 12; ++k)
      for (int r = 0; r < kRanks; ++r) ASSERT_EQ(work[r].issue(*lanes[r], k), Result::Success) << last_error();
    for (int r = 0; r < kRanks; ++r) ASSERT_EQ(lanes[r]->drain(), Result::Success) << last_error();
    for (int r = 0; r < kRanks; ++r) {
      EXPECT_TRUE(lanes[r]->stream_done(kHangBound)) << "rank " << r;
      std::string why;
      EXPECT_TRUE(work[r].exact(lanes[r]->applied_shares(), &why)) << "rank " << r << ": " << why;
      EXPECT_EQ(lanes[r]->applied_shares(), lanes[0]->applied_shares()) << "rank " << r;
    }
  }
  comms.clear();
}


// ---- the lane alone (no engine): its own rules ----

namespace alone {

// Steps that run nothing: each share takes the times given, optionally held at a gate or failing.
class FakeSteps final : public LaneSteps {
 public:
  std::atomic<bool> gate_open{true};
  uint64_t fail_call = 0;
  std::atomic<int> shares_run{0}, releases{0}, afters{0}, aborts{0}, stuck_releases{0};
  std::atomic<std::thread::id> share_thread{};

  Result run_share(LaneJob& job, std::vector<double>* seconds) override {
    step("the fake share's gate");
    while (!gate_open.load() && aborts.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    // Stopped transfers end a share with an error, as the engine's do; never as if it had run.
    if (!gate_open.load()) return fail(Result::RemoteError, "share stopped by abort");
    share_thread.store(std::this_thread::get_id());
    shares_run.fetch_add(1);
    if (job.ledger.call == fail_call) return fail(Result::SystemError, "share %llu broke", static_cast<unsigned long long>(fail_call));
    if (job.ledger.timed) *seconds = {1e-3, 1e-3};  // one rank: NVLink path, PCIe path
    return Result::Success;
  }
  void release_waiters() override { releases.fetch_add(1); }
  void after(LaneJob&) override { afters.fetch_add(1); }
  void abort_transfers() override { aborts.fetch_add(1); }
  // As on the GPU: once what waits on braid is released, the stuck call returns (with an error).
  void release_stuck() override {
    stuck_releases.fetch_add(1);
    aborts.fetch_add(1);
  }
};

std::unique_ptr<SplitLedger> one_rank_ledger(uint64_t lag) {
  std::unique_ptr<balance::Balancer> b;
  EXPECT_EQ(balance::make_balancer("static", 2, 0.5, &b), Result::Success);
  // Calls of 64 KiB and more are split; smaller ones go to the NVLink path alone.
  return std::make_unique<SplitLedger>(std::make_unique<balance::SplitTable>(std::move(b), size_t{64} << 10), 1, lag,
                                       kAlignBytes);
}

std::unique_ptr<LaneJob> next_job(SplitLedger& ledger, size_t count) {
  auto job = std::make_unique<LaneJob>();
  EXPECT_EQ(ledger.next(Collective::AllReduce, DataType::Float32, count * 4, count, &job->ledger), Result::Success);
  return job;
}

// A lane on one rank whose shares wait at FakeSteps' gate until the test opens it (which every
// test must do before the lane goes: stopping runs what is queued).
struct HeldLane {
  std::unique_ptr<SplitLedger> ledger = one_rank_ledger(4);
  FakeSteps steps;
  ProgressLane lane{close_gate(steps), ledger.get(), true};

  static FakeSteps* close_gate(FakeSteps& s) {
    s.gate_open.store(false);
    return &s;
  }
};

ProgressLane::Applied recorder(std::vector<uint64_t>* order) {
  return [order](LaneJob& job, const std::vector<double>&, double) { order->push_back(job.ledger.call); };
}

// Call 2 (NVLink alone) settles at once, while call 1's share is held: the table still takes
// them in call order, waiting for call 1.
TEST(ProgressLaneAlone, AppliesSettledCallsInCallOrder) {
  HangGuard guard(60);
  HeldLane held;
  auto& [ledger, steps, lane] = held;
  auto first = next_job(*ledger, 1 << 20);
  ASSERT_TRUE(first->runs_on_lane());
  lane.submit(std::move(first));
  auto second = next_job(*ledger, 1000);
  ASSERT_FALSE(second->runs_on_lane());
  lane.settle_at_once(std::move(second));
  lane.submit(next_job(*ledger, 1 << 20));
  std::vector<uint64_t> order;
  lane.apply_ready(recorder(&order));
  EXPECT_TRUE(order.empty()) << "call 2 was applied before call 1";
  steps.gate_open.store(true);
  ASSERT_EQ(lane.apply_through(3, true, recorder(&order)), Result::Success) << last_error();
  EXPECT_EQ(order, (std::vector<uint64_t>{1, 2, 3}));
  EXPECT_EQ(ledger->applied(), 3u);
  EXPECT_EQ(steps.afters.load(), 2);
  EXPECT_EQ(lane.submitted(), 2u);
  EXPECT_EQ(lane.finished(), 2u);
}

// A communicator whose calls all stay on NVLink pays for no thread: the lane makes its thread
// for the first job handed on, not before.
TEST(ProgressLaneAlone, ItsThreadIsMadeForTheFirstJobHandedOn) {
  HangGuard guard(60);
  HeldLane held;
  auto& [ledger, steps, lane] = held;
  EXPECT_FALSE(lane.thread_made());
  auto unsplit = next_job(*ledger, 1000);
  ASSERT_FALSE(unsplit->runs_on_lane());
  lane.settle_at_once(std::move(unsplit));
  EXPECT_EQ(lane.wait_idle(), Result::Success);
  EXPECT_FALSE(lane.thread_made()) << "a call settled at once made the lane's thread";
  lane.submit(next_job(*ledger, 1 << 20));
  EXPECT_TRUE(lane.thread_made());
  steps.gate_open.store(true);
  std::vector<uint64_t> order;
  ASSERT_EQ(lane.apply_through(2, true, recorder(&order)), Result::Success) << last_error();
  EXPECT_EQ(order, (std::vector<uint64_t>{1, 2}));
  EXPECT_NE(steps.share_thread.load(), std::this_thread::get_id()) << "the share ran on the caller";
}

// wait_idle() returns once every job handed over has finished, and not before: the calling thread
// waits so before it maps a peer's new buffer (which may wait for the whole device).
TEST(ProgressLaneAlone, WaitIdleReturnsOnceEveryJobHasFinished) {
  HangGuard guard(60);
  HeldLane held;
  auto& [ledger, steps, lane] = held;
  lane.submit(next_job(*ledger, 1 << 20));
  lane.submit(next_job(*ledger, 1 << 20));
  std::atomic<bool> idle{false};
  std::thread waiter([&] {
    EXPECT_EQ(lane.wait_idle(), Result::Success) << last_error();
    idle.store(true);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(idle.load()) << "wait_idle returned while the lane held its jobs";
  steps.gate_open.store(true);
  waiter.join();
  EXPECT_EQ(lane.finished(), 2u);
  EXPECT_EQ(lane.wait_idle(), Result::Success);  // nothing in flight: at once
}

// A lane held inside a call says so (the process's lane watch WARNs with it past BRAID_TIMEOUT):
// which call, for how long, at which step; and not once the call is done.
TEST(ProgressLaneAlone, ALaneHeldInsideACallSaysWhereItIs) {
  HangGuard guard(60);
  HeldLane held;
  auto& [ledger, steps, lane] = held;
  uint64_t call = 0;
  std::string text;
  EXPECT_FALSE(lane.stuck_for(0.0, &call, &text));  // idle
  lane.submit(next_job(*ledger, 1 << 20));
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  EXPECT_FALSE(lane.stuck_for(10.0, &call, &text));
  ASSERT_TRUE(lane.stuck_for(0.1, &call, &text));
  EXPECT_EQ(call, 1u);
  EXPECT_NE(text.find("split call 1 for"), std::string::npos) << text;
  EXPECT_NE(text.find("the fake share's gate"), std::string::npos) << text;
  steps.gate_open.store(true);
  ASSERT_EQ(lane.wait_idle(), Result::Success);
  EXPECT_FALSE(lane.stuck_for(0.0, &call, &text));
}

// The process's lane watch WARNs, once, when a lane stays inside a call past BRAID_TIMEOUT, and
// at twice the bound gives up on it: the lane fails with the reason, what waits on braid is
// released, and the held call ends (an error, not a hang).
TEST(ProgressLaneAlone, TheWatchWarnsOnceThenGivesUpOnALaneStuckPastTheTimeout) {
  HangGuard guard(60);
  Result idle = Result::Success;
  std::string failure_text;
  int stuck_releases = 0;
  const std::string log = test::capture_log({{"BRAID_TIMEOUT", "0.3"}, {"BRAID_DEBUG", "WARN"}}, [&] {
    HeldLane held;
    auto& [ledger, steps, lane] = held;
    lane.submit(next_job(*ledger, 1 << 20));
    // The gate never opens: only the watch ends the call (it looks once a second).
    const auto began = std::chrono::steady_clock::now();
    while (steps.stuck_releases.load() == 0 && std::chrono::steady_clock::now() - began < std::chrono::seconds(10))
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    idle = lane.wait_idle();
    lane.failure(&failure_text);
    std::this_thread::sleep_for(std::chrono::milliseconds(2200));  // no second give-up for the same call
    stuck_releases = steps.stuck_releases.load();
    steps.gate_open.store(true);
  });
  const size_t first = log.find("inside split call 1 for");
  ASSERT_NE(first, std::string::npos) << log;
  EXPECT_NE(log.find("the fake share's gate"), std::string::npos) << log;
  EXPECT_EQ(log.find("BRAID WARN lane_watch", log.find("BRAID WARN lane_watch") + 1), std::string::npos)
      << "warned twice:\n" << log;
  EXPECT_EQ(stuck_releases, 1);
  EXPECT_EQ(idle, Result::InternalError);
  EXPECT_NE(failure_text.find("released its streams"), std::string::npos) << failure_text;
}

// BRAID_ASYNC=0: no thread; the share runs on the calling thread before submit returns.
TEST(ProgressLaneAlone, WithoutAThreadTheShareRunsOnTheCaller) {
  auto ledger = one_rank_ledger(1);
  FakeSteps steps;
  ProgressLane lane(&steps, ledger.get(), false);
  EXPECT_FALSE(lane.async());
  lane.submit(next_job(*ledger, 1 << 20));
  EXPECT_EQ(lane.finished(), 1u);
  EXPECT_EQ(steps.share_thread.load(), std::this_thread::get_id());
  std::vector<uint64_t> order;
  ASSERT_EQ(lane.apply_through(1, false, recorder(&order)), Result::Success);
  EXPECT_EQ(order, (std::vector<uint64_t>{1}));
}

// A failed share: its waiters are released, later shares are not run (but their waiters are
// released too), and the failure with its text reaches whoever waits for a settled call.
TEST(ProgressLaneAlone, AFailureFailsLaterCallsAndReleasesTheirWaiters) {
  HangGuard guard(60);
  auto ledger = one_rank_ledger(4);
  FakeSteps steps;
  steps.fail_call = 1;
  ProgressLane lane(&steps, ledger.get(), true);
  lane.submit(next_job(*ledger, 1 << 20));
  lane.submit(next_job(*ledger, 1 << 20));
  std::vector<uint64_t> order;
  EXPECT_EQ(lane.apply_through(2, true, recorder(&order)), Result::SystemError);
  EXPECT_NE(std::string(last_error()).find("share 1 broke"), std::string::npos) << last_error();
  lane.stop();
  lane.stop();  // twice is harmless
  EXPECT_TRUE(order.empty());
  EXPECT_EQ(steps.shares_run.load(), 1);
  EXPECT_EQ(steps.releases.load(), 2);
  EXPECT_EQ(steps.afters.load(), 2);
  std::string text;
  EXPECT_EQ(lane.failure(&text), Result::SystemError);
  EXPECT_NE(text.find("share 1 broke"), std::string::npos) << text;
}

// Abort from another thread ends a wait for a call that cannot settle, and stops the transfers.
TEST(ProgressLaneAlone, AbortEndsTheWaitForASettledCall) {
  HangGuard guard(60);
  // The share never ends on its own.
  HeldLane held;
  auto& [ledger, steps, lane] = held;
  lane.submit(next_job(*ledger, 1 << 20));
  std::thread aborter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    lane.abort();
  });
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<uint64_t> order;
  EXPECT_EQ(lane.apply_through(1, true, recorder(&order)), Result::RemoteError);
  EXPECT_LT(since(t0), 5.0);
  aborter.join();
  EXPECT_EQ(steps.aborts.load(), 1);
  std::string text;
  EXPECT_EQ(lane.failure(&text), Result::RemoteError);
  EXPECT_NE(text.find("aborted"), std::string::npos) << text;
}

}  // namespace alone

}  // namespace
}  // namespace braid::multipath
