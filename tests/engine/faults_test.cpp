// Faults and errors: a rank killed mid-collective, a rank that never arrives, abort(), and bad
// arguments; each must end in the right Result and last-error text, within the timeout, with
// nothing left in /dev/shm.
#include <dirent.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>

#include "common/settings.h"
#include "support/scoped_env.h"
#include "harness.h"

#include "support/sanitizer_suppressions.h"  // these tests change BRAID_TIMEOUT and fork ranks

namespace braid {
namespace {

std::vector<std::string> shm_entries(const std::string& prefix) {
  std::vector<std::string> found;
  if (DIR* d = opendir("/dev/shm")) {
    while (dirent* e = readdir(d))
      if (std::string(e->d_name).rfind(prefix, 0) == 0) found.push_back(e->d_name);
    closedir(d);
  }
  return found;
}

using test::ScopedEnv;

// Upper bounds here catch hangs, not slowness: the text of each error proves which mechanism
// ended the wait (watchdog, timeout or abort), and every other mechanism is set far beyond this.
// CI runs these beside sanitizer sweeps on two cores, where a process can go unscheduled for
// seconds (one run took 9 s to see a peer die that is seen in 20 ms on an idle machine).
constexpr double kHangBound = 20.0;

double seconds(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// A dead peer is found by the watchdog, not by the timeout: with a long timeout the others must
// report "died" well before it.
TEST(EngineFaults, KilledRankFailsTheOthersWithinTimeout) {
  ScopedEnv timeout("BRAID_TIMEOUT", "60");
  const auto topo = test::load_test_topology();
  const int ranks = 4, victim = 2;
  const engine::CommId id = engine::CommId::random();
  struct Report {
    std::atomic<int> started;
    int result[4];
    double seconds[4];
    char error[4][256];
  };
  auto* report = static_cast<Report*>(
      mmap(nullptr, sizeof(Report), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  new (report) Report{};
  std::vector<pid_t> pids;
  for (int r = 0; r < ranks; ++r) {
    pid_t pid = fork();
    if (pid == 0) {
      device::CpuBackend backend;
      std::unique_ptr<engine::Communicator> comm;
      Result res = engine::Communicator::create(id, r, ranks, topo, &backend, &comm);
      const size_t count = 4 << 20;
      std::vector<float> send(count, 1.f), recv(count);
      report->started.fetch_add(1);
      auto t0 = std::chrono::steady_clock::now();
      // Loop until the victim is killed under us (it never returns).
      for (int i = 0; i < 1000 && res == Result::Success; ++i) {
        t0 = std::chrono::steady_clock::now();
        res = comm->all_reduce(send.data(), recv.data(), count, DataType::Float32, RedOp::Sum);
      }
      report->result[r] = static_cast<int>(res);
      report->seconds[r] = seconds(t0);
      std::snprintf(report->error[r], 256, "%s", last_error());
      _exit(0);
    }
    pids.push_back(pid);
  }
  while (report->started.load() < ranks) usleep(1000);
  usleep(100 * 1000);  // let them get into the collectives
  kill(pids[victim], SIGKILL);
  const auto killed_at = std::chrono::steady_clock::now();
  // Reap the others first: the victim stays a zombie, which the engine must see as dead.
  for (int r = 0; r < ranks; ++r) {
    if (r == victim) continue;
    int status = 0;
    waitpid(pids[r], &status, 0);
    EXPECT_TRUE(WIFEXITED(status)) << "rank " << r << " status " << status;
  }
  const double elapsed = seconds(killed_at);
  waitpid(pids[victim], nullptr, 0);
  for (int r = 0; r < ranks; ++r) {
    if (r == victim) continue;
    EXPECT_EQ(static_cast<Result>(report->result[r]), Result::RemoteError) << "rank " << r;
    const std::string text = report->error[r];
    EXPECT_NE(text.find("rank 2 (pid " + std::to_string(pids[victim]) + ")"), std::string::npos)
        << "rank " << r << ": " << text;
    EXPECT_NE(text.find("died during allreduce"), std::string::npos) << text;
    EXPECT_LT(report->seconds[r], kHangBound) << "rank " << r;
  }
  EXPECT_LT(elapsed, kHangBound);
  EXPECT_TRUE(shm_entries("braid-" + id.hex()).empty());
  munmap(report, sizeof(Report));
}

TEST(EngineFaults, StalledRankTimesOutWithItsName) {
  ScopedEnv timeout("BRAID_TIMEOUT", "1");
  const auto topo = test::load_test_topology();
  auto outcomes = test::run_ranks(
      test::Mode::Threads, 3, topo, 8, [&](engine::Communicator& comm, int rank, unsigned char* out) {
        if (rank == 1) return Result::Success;  // never calls the collective
        std::vector<float> send(100, 1.f), recv(100);
        const auto t0 = std::chrono::steady_clock::now();
        Result r = comm.all_reduce(send.data(), recv.data(), 100, DataType::Float32, RedOp::Sum);
        const double s = seconds(t0);
        std::memcpy(out, &s, sizeof(s));
        return r;
      });
  // The first rank to wait out BRAID_TIMEOUT aborts the communicator and the other fails at once:
  // a rank that reached the call later (a slow thread start under a sanitizer) waited less.
  double longest = 0;
  for (int r : {0, 2}) {
    EXPECT_EQ(outcomes[r].result, Result::RemoteError);
    EXPECT_NE(outcomes[r].error.find("rank 1 (pid"), std::string::npos) << outcomes[r].error;
    EXPECT_NE(outcomes[r].error.find("stopped responding during allreduce after"), std::string::npos)
        << outcomes[r].error;
    double s = 0;
    std::memcpy(&s, outcomes[r].output.data(), sizeof(s));
    longest = std::max(longest, s);
    EXPECT_LT(s, kHangBound);
  }
  EXPECT_GE(longest, 0.9);
}

TEST(EngineFaults, AbortUnblocksWithinASecond) {
  ScopedEnv timeout("BRAID_TIMEOUT", "60");
  const auto topo = test::load_test_topology();
  auto outcomes = test::run_ranks(
      test::Mode::Threads, 2, topo, 8, [&](engine::Communicator& comm, int rank, unsigned char* out) {
        if (rank == 1) {
          std::this_thread::sleep_for(std::chrono::milliseconds(200));
          comm.abort();
          return Result::Success;
        }
        std::vector<float> send(100, 1.f), recv(100);
        const auto t0 = std::chrono::steady_clock::now();
        Result r = comm.all_reduce(send.data(), recv.data(), 100, DataType::Float32, RedOp::Sum);
        const double s = seconds(t0);
        std::memcpy(out, &s, sizeof(s));
        return r;
      });
  EXPECT_EQ(outcomes[0].result, Result::RemoteError);
  EXPECT_NE(outcomes[0].error.find("rank 1 (pid"), std::string::npos) << outcomes[0].error;
  EXPECT_NE(outcomes[0].error.find("aborted"), std::string::npos) << outcomes[0].error;
  double s = 0;
  std::memcpy(&s, outcomes[0].output.data(), sizeof(s));
  EXPECT_LT(s, kHangBound);
}

// Argument errors are reported on the calling rank without involving the others.
TEST(EngineErrors, BadArgumentsNameTheProblem) {
  const auto topo = test::load_test_topology();
  auto outcomes = test::run_ranks(
      test::Mode::Threads, 1, topo, 0, [&](engine::Communicator& comm, int, unsigned char*) {
        float buffer[16] = {};
        struct Expect {
          Result got;
          Result want;
          const char* text;
        };
        std::vector<std::pair<Expect, std::string>> checks;
        auto check = [&](Result got, Result want, const char* text) {
          checks.push_back({{got, want, text}, last_error()});
        };
        check(comm.all_reduce(nullptr, buffer, 4, DataType::Float32, RedOp::Sum),
              Result::InvalidArgument, "sendbuff is null");
        check(comm.all_gather(buffer, nullptr, 4, DataType::Float32), Result::InvalidArgument,
              "recvbuff is null");
        check(comm.all_reduce(buffer, buffer, 4, static_cast<DataType>(42), RedOp::Sum),
              Result::InvalidArgument, "invalid datatype 42");
        check(comm.all_reduce(buffer, buffer, 4, DataType::Float32, static_cast<RedOp>(9)),
              Result::InvalidArgument, "invalid reduction op 9");
        check(comm.broadcast(buffer, buffer, 4, DataType::Float32, 3), Result::InvalidArgument,
              "root 3 out of range");
        check(comm.all_reduce(buffer, buffer, 4, DataType::Float32, RedOp::PreMulSum),
              Result::InvalidArgument, "PreMulSum needs its scalar");
        check(comm.all_to_all(buffer, buffer, SIZE_MAX / 2, DataType::Float32),
              Result::InvalidArgument, "overflows");
        check(comm.all_reduce(nullptr, nullptr, 0, DataType::Float32, RedOp::Sum),
              Result::Success, "");
        for (const auto& [e, text] : checks) {
          if (e.got != e.want)
            return fail(Result::InternalError, "expected %s, got %s (%s)", result_string(e.want),
                        result_string(e.got), text.c_str());
          if (e.want != Result::Success && text.find(e.text) == std::string::npos)
            return fail(Result::InternalError, "error text '%s' lacks '%s'", text.c_str(), e.text);
        }
        return Result::Success;
      });
  EXPECT_EQ(outcomes[0].result, Result::Success) << outcomes[0].error;
}

TEST(EngineErrors, MismatchedCountsFailOnEveryRankAndTheCommunicatorStaysUsable) {
  const auto topo = test::load_test_topology();
  for (auto mode : {test::Mode::Threads, test::Mode::Processes}) {
    auto outcomes = test::run_ranks(
        mode, 2, topo, 8, [&](engine::Communicator& comm, int rank, unsigned char* out) {
          std::vector<float> send(16, 1.f), recv(16);
          Result r = comm.all_reduce(send.data(), recv.data(), rank == 0 ? 10 : 12,
                                     DataType::Float32, RedOp::Sum);
          if (r != Result::InvalidUsage)
            return fail(Result::InternalError, "mismatch gave %s", result_string(r));
          const std::string text = last_error();
          if (text.find("rank 0 called allreduce(count 10, float, sum) but rank 1 called "
                        "allreduce(count 12, float, sum)") == std::string::npos)
            return fail(Result::InternalError, "mismatch text: %s", text.c_str());
          BRAID_TRY(comm.all_reduce(send.data(), recv.data(), 16, DataType::Float32, RedOp::Sum));
          std::memcpy(out, recv.data(), sizeof(float));
          return Result::Success;
        });
    for (int r = 0; r < 2; ++r) {
      ASSERT_EQ(outcomes[r].result, Result::Success) << outcomes[r].error;
      float v = 0;
      std::memcpy(&v, outcomes[r].output.data(), sizeof(v));
      EXPECT_EQ(v, 2.f);
    }
  }
}

TEST(EngineShm, SegmentsAreGoneOnceEveryRankAttached) {
  const auto topo = test::load_test_topology();
  auto outcomes = test::run_ranks(
      test::Mode::Processes, 3, topo, 0, [&](engine::Communicator& comm, int, unsigned char*) {
        for (const auto& name : comm.segment_names())
          if (!shm_entries(name.substr(1)).empty())
            return fail(Result::InternalError, "%s still in /dev/shm", name.c_str());
        return Result::Success;
      });
  for (const auto& o : outcomes) EXPECT_EQ(o.result, Result::Success) << o.error;
}

}  // namespace
}  // namespace braid
