// The exchange board (engine/exchange_board.h): 2 to 8 ranks as threads and as forked processes
// over its shared segment. Every rank that arrives gets the same verdict and, on COMPLETE, the same
// words; an absent rank makes the others abandon the slot within the bound, and it reads ABANDONED
// when it comes late; a rank that abandons its next slot releases the others at once; the ring of
// slots is reused over many exchanges; mismatched summaries are refused alike everywhere.
#include "engine/exchange_board.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <random>
#include <thread>
#include <vector>

#include "device/backoff.h"
#include "route/grouped_exchange.h"

namespace braid::engine {
namespace {

enum class Mode { Threads, Processes };

// Per rank, `words` 64-bit words the parent reads after the ranks end (shared across fork).
class Outputs {
 public:
  Outputs(int ranks, size_t words) : words_(words), bytes_(size_t(ranks) * words * 8) {
    base_ = static_cast<uint64_t*>(mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  }
  ~Outputs() { munmap(base_, bytes_); }
  uint64_t* of(int rank) const { return base_ + size_t(rank) * words_; }

 private:
  size_t words_, bytes_;
  uint64_t* base_;
};

// Runs body(rank, out) on every rank; a rank's result is out[0] (0: passed).
void run_ranks(Mode mode, int n, const Outputs& outputs, const std::function<void(int, uint64_t*)>& body) {
  if (mode == Mode::Threads) {
    std::vector<std::thread> threads;
    for (int r = 0; r < n; ++r) threads.emplace_back([&, r] { body(r, outputs.of(r)); });
    for (auto& t : threads) t.join();
    return;
  }
  std::vector<pid_t> pids;
  for (int r = 0; r < n; ++r) {
    const pid_t pid = fork();
    if (pid == 0) {
      body(r, outputs.of(r));
      _exit(0);
    }
    pids.push_back(pid);
  }
  for (pid_t pid : pids) {
    int status = 0;
    waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
}

// Runs body(board, rank, out) on every rank, each with its own handle of one fresh board of
// `words` words per rank; a rank that cannot open it counts 1000 failures (out[0]).
void run_on_board(Mode mode, int n, size_t words, const Outputs& outputs,
                  const std::function<void(ExchangeBoard&, int, uint64_t*)>& body) {
  const CommId id = CommId::random();
  run_ranks(mode, n, outputs, [&](int rank, uint64_t* o) {
    std::unique_ptr<ExchangeBoard> board;
    if (ExchangeBoard::open(id, rank, n, words, &board) != Result::Success) {
      o[0] = 1000;
      return;
    }
    body(*board, rank, o);
  });
}

const char* name(Mode m) { return m == Mode::Threads ? "threads" : "processes"; }

// Rank r's words at its a-th arrival.
std::vector<uint64_t> words_of(int rank, uint64_t attempt, size_t count) {
  std::vector<uint64_t> w(count);
  for (size_t i = 0; i < count; ++i) w[i] = (uint64_t(rank) << 48) ^ (attempt << 16) ^ i;
  return w;
}

constexpr size_t kWords = 5;

// Out words: [0] failures, [1] complete verdicts, [2] abandoned verdicts, [3] off at the end,
// [4] microseconds of the last arrival.
enum Out { kFailures, kComplete, kAbandoned, kOff, kLastUs, kOutWords };

TEST(EngineExchangeBoard, AllArriveCompleteWithTheSameWordsAndTheRingIsReused) {
  for (Mode mode : {Mode::Threads, Mode::Processes})
    for (int n = 2; n <= 8; ++n) {
      const int rounds = 3 * ExchangeBoard::kSlots + 1;
      Outputs out(n, kOutWords);
      run_on_board(mode, n, kWords, out, [&](ExchangeBoard& board, int rank, uint64_t* o) {
        std::mt19937 rng{unsigned(rank)};
        for (int a = 1; a <= rounds; ++a) {
          // Ranks come in a different order each time.
          if (rng() % 3 == 0) std::this_thread::sleep_for(std::chrono::microseconds(rng() % 2000));
          std::vector<uint64_t> all;
          if (board.arrive(words_of(rank, uint64_t(a), kWords), 10.0, &all) != ExchangeBoard::Verdict::Complete) {
            ++o[kAbandoned];
            continue;
          }
          ++o[kComplete];
          for (int q = 0; q < n; ++q)
            if (!std::equal(all.begin() + q * long(kWords), all.begin() + (q + 1) * long(kWords),
                            words_of(q, uint64_t(a), kWords).begin()))
              ++o[kFailures];
        }
        o[kOff] = board.off();
      });
      for (int r = 0; r < n; ++r) {
        SCOPED_TRACE(std::string(name(mode)) + " n=" + std::to_string(n) + " rank " + std::to_string(r));
        EXPECT_EQ(out.of(r)[kFailures], 0u);
        EXPECT_EQ(out.of(r)[kComplete], uint64_t(rounds));
        EXPECT_EQ(out.of(r)[kAbandoned], 0u);
        EXPECT_EQ(out.of(r)[kOff], 0u);
      }
    }
}

TEST(EngineExchangeBoard, AnAbsentRankMakesEveryOtherAbandonWithinTheBoundAndTheLateOneReadsIt) {
  const double bound = 0.2;
  for (Mode mode : {Mode::Threads, Mode::Processes})
    for (int n = 2; n <= 8; n += 3) {
      Outputs out(n, kOutWords);
      // Two complete exchanges, then rank n-1 stays away from the third until the others returned.
      const int late = n - 1;
      run_on_board(mode, n, kWords, out, [&](ExchangeBoard& board, int rank, uint64_t* o) {
        std::vector<uint64_t> all;
        for (int a = 1; a <= 2; ++a)
          if (board.arrive(words_of(rank, uint64_t(a), kWords), 10.0, &all) != ExchangeBoard::Verdict::Complete)
            ++o[kFailures];
        if (rank == late) std::this_thread::sleep_for(std::chrono::duration<double>(3 * bound));
        const auto start = std::chrono::steady_clock::now();
        const ExchangeBoard::Verdict v = board.arrive(words_of(rank, 3, kWords), bound, &all);
        o[kLastUs] = uint64_t(device::seconds_since(start) * 1e6);
        ++o[v == ExchangeBoard::Verdict::Complete ? kComplete : kAbandoned];
        o[kOff] = board.off();
      });
      for (int r = 0; r < n; ++r) {
        SCOPED_TRACE(std::string(name(mode)) + " n=" + std::to_string(n) + " rank " + std::to_string(r));
        EXPECT_EQ(out.of(r)[kFailures], 0u);
        EXPECT_EQ(out.of(r)[kComplete], 0u);
        EXPECT_EQ(out.of(r)[kAbandoned], 1u);
        EXPECT_EQ(out.of(r)[kOff], 1u);
        // The others waited about the bound (generous slack for a loaded 2-core machine); the late
        // rank did not wait at all.
        if (r == late) {
          EXPECT_LT(out.of(r)[kLastUs], uint64_t(bound * 1e6 / 2));
        } else {
          EXPECT_GE(out.of(r)[kLastUs], uint64_t(bound * 1e6 * 0.9));
          EXPECT_LT(out.of(r)[kLastUs], uint64_t((bound + 2.0) * 1e6));
        }
      }
    }
}

TEST(EngineExchangeBoard, ARankThatWillNotComeReleasesTheOthersAtOnce) {
  for (Mode mode : {Mode::Threads, Mode::Processes}) {
    const int n = 4;
    Outputs out(n, kOutWords);
    run_on_board(mode, n, kWords, out, [&](ExchangeBoard& board, int rank, uint64_t* o) {
      std::vector<uint64_t> all;
      if (board.arrive(words_of(rank, 1, kWords), 10.0, &all) != ExchangeBoard::Verdict::Complete) ++o[kFailures];
      const auto start = std::chrono::steady_clock::now();
      if (rank == 2) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        board.abandon();  // its send/recv went to NCCL alone
        board.abandon();  // once off, nothing more
      } else {
        // A bound far above the test's time: only the abandonment can end the wait.
        ++o[board.arrive(words_of(rank, 2, kWords), 60.0, &all) == ExchangeBoard::Verdict::Complete ? kComplete
                                                                                                   : kAbandoned];
      }
      o[kLastUs] = uint64_t(device::seconds_since(start) * 1e6);
      o[kOff] = board.off();
      // Off for good: a later arrival is abandoned at once.
      if (board.arrive(words_of(rank, 3, kWords), 60.0, &all) != ExchangeBoard::Verdict::Abandoned) ++o[kFailures];
    });
    for (int r = 0; r < n; ++r) {
      SCOPED_TRACE(std::string(name(mode)) + " rank " + std::to_string(r));
      EXPECT_EQ(out.of(r)[kFailures], 0u);
      EXPECT_EQ(out.of(r)[kComplete], 0u);
      EXPECT_EQ(out.of(r)[kAbandoned], r == 2 ? 0u : 1u);
      EXPECT_EQ(out.of(r)[kOff], 1u);
      EXPECT_LT(out.of(r)[kLastUs], 10'000'000u);
    }
  }
}

// The words of a real grouped exchange: every rank gets them all and agree_on_exchange gives the
// same verdict everywhere, a layout when the calls match and a refusal when one rank's receive is
// one byte short.
TEST(EngineExchangeBoard, SummariesAgreeOrAreRefusedAlikeOnEveryRank) {
  for (Mode mode : {Mode::Threads, Mode::Processes})
    for (int n : {2, 3, 5, 8})
      for (bool mismatched : {false, true}) {
        const size_t words = size_t(n) * route::kSummaryWords;
        // [0] failures, [1] 1 agreed / 2 refused, [2] a hash of the layout.
        Outputs out(n, 3);
        run_on_board(mode, n, words, out, [&](ExchangeBoard& board, int rank, uint64_t* o) {
          // An all-to-allv: rank s sends d (s + 2d + 1) * 100 bytes, as two calls when s + d is even.
          std::vector<route::PeerCall> calls;
          auto bytes = [](int s, int d) { return size_t(s + 2 * d + 1) * 100; };
          for (int p = 0; p < n; ++p) {
            const size_t send = bytes(rank, p);
            size_t recv = bytes(p, rank);
            if (mismatched && rank == n - 1 && p == 0) recv -= 1;
            const bool split = (rank + p) % 2 == 0;
            for (int part = 0; part < (split ? 2 : 1); ++part) {
              calls.push_back({route::PeerCall::Send, p, nullptr, split ? send / 2 + part * (send % 2) : send});
              calls.push_back({route::PeerCall::Recv, p, nullptr, split ? recv / 2 + part * (recv % 2) : recv});
            }
          }
          route::RankFlows flows;
          if (route::sort_into_flows(rank, n, calls, &flows) != Result::Success) ++o[0];
          std::vector<uint64_t> all;
          if (board.arrive(route::summarize(flows), 10.0, &all) != ExchangeBoard::Verdict::Complete) {
            ++o[0];
            return;
          }
          route::ExchangeLayout layout;
          if (route::agree_on_exchange(n, all, &layout) == Result::Success) {
            o[1] = 1;
            uint64_t h = 0;
            for (size_t c : layout.counts) h = h * 1000003 + c;
            o[2] = h;
          } else {
            o[1] = 2;
            board.turn_off();
          }
        });
        for (int r = 0; r < n; ++r) {
          SCOPED_TRACE(std::string(name(mode)) + " n=" + std::to_string(n) + (mismatched ? " mismatched" : ""));
          EXPECT_EQ(out.of(r)[0], 0u);
          EXPECT_EQ(out.of(r)[1], mismatched ? 2u : 1u);
          EXPECT_EQ(out.of(r)[2], out.of(0)[2]);
        }
      }
}

// Many exchanges, each with one rank late by a random amount, some beyond the bound: whatever
// happens, every rank reads the same verdict at every slot, and none comes after the first
// abandoned one.
TEST(EngineExchangeBoard, EveryRankReadsTheSameVerdictAtEverySlot) {
  for (Mode mode : {Mode::Threads, Mode::Processes})
    for (int n : {3, 6}) {
      const int rounds = 40;
      // [0] failures, then per round 1 complete / 2 abandoned / 0 not reached.
      Outputs out(n, size_t(rounds) + 1);
      run_on_board(mode, n, kWords, out, [&](ExchangeBoard& board, int rank, uint64_t* o) {
        std::vector<uint64_t> all;
        for (int a = 1; a <= rounds && !board.off(); ++a) {
          // The same draw on every rank: who is late, and by how much (mostly well inside 20 ms).
          std::mt19937 rng(unsigned(a) * 7919u + unsigned(n));
          const int late = int(rng() % unsigned(n));
          const int late_us = rng() % 16 == 0 ? 40'000 : int(rng() % 3000);
          if (rank == late) std::this_thread::sleep_for(std::chrono::microseconds(late_us));
          const ExchangeBoard::Verdict v = board.arrive(words_of(rank, uint64_t(a), kWords), 0.02, &all);
          o[a] = v == ExchangeBoard::Verdict::Complete ? 1 : 2;
          if (v == ExchangeBoard::Verdict::Complete)
            for (int q = 0; q < n; ++q)
              if (all[size_t(q) * kWords] != words_of(q, uint64_t(a), kWords)[0]) ++o[0];
        }
      });
      for (int r = 0; r < n; ++r) {
        SCOPED_TRACE(std::string(name(mode)) + " n=" + std::to_string(n) + " rank " + std::to_string(r));
        EXPECT_EQ(out.of(r)[0], 0u);
        for (int a = 1; a <= rounds; ++a) EXPECT_EQ(out.of(r)[a], out.of(0)[a]) << "slot " << a;
      }
    }
}

TEST(EngineExchangeBoard, RefusesWhatItCannotHold) {
  std::unique_ptr<ExchangeBoard> board;
  const CommId id = CommId::random();
  EXPECT_EQ(ExchangeBoard::open(id, 0, ExchangeBoard::kMaxRanks + 1, 1, &board), Result::InvalidArgument);
  EXPECT_EQ(ExchangeBoard::open(id, 2, 2, 1, &board), Result::InvalidArgument);
  EXPECT_EQ(ExchangeBoard::open(id, 0, 2, 0, &board), Result::InvalidArgument);
  // Two ranks that disagree on the communicator's size do not share a board.
  std::unique_ptr<ExchangeBoard> a, b;
  ASSERT_EQ(ExchangeBoard::open(id, 0, 2, 4, &a), Result::Success);
  EXPECT_NE(ExchangeBoard::open(id, 1, 3, 4, &b), Result::Success);
  // A single rank completes alone.
  std::unique_ptr<ExchangeBoard> one;
  ASSERT_EQ(ExchangeBoard::open(CommId::random(), 0, 1, 2, &one), Result::Success);
  std::vector<uint64_t> all;
  EXPECT_EQ(one->arrive(std::vector<uint64_t>{7, 8}, 0.0, &all), ExchangeBoard::Verdict::Complete);
  EXPECT_EQ(all, (std::vector<uint64_t>{7, 8}));
}

// The second rank finds the board made and opens it: no failure is recorded or logged (every routed
// run on the one-GPU rig logged a WARN "shm_open ... File exists" per rank but the first).
TEST(EngineExchangeBoard, ALaterRankOpensTheBoardWithoutAFailure) {
  const CommId id = CommId::random();
  std::unique_ptr<ExchangeBoard> first, second;
  ASSERT_EQ(ExchangeBoard::open(id, 0, 2, 4, &first), Result::Success);
  clear_last_error();
  ASSERT_EQ(ExchangeBoard::open(id, 1, 2, 4, &second), Result::Success);
  EXPECT_STREQ(last_error(), "");
}

TEST(EngineExchangeBoard, TheIdIsTheSameFromTheSameBytesAndDiffersOtherwise) {
  const unsigned char a[4] = {1, 2, 3, 4}, b[4] = {1, 2, 3, 5};
  EXPECT_EQ(board_id(a).hex(), board_id(a).hex());
  EXPECT_NE(board_id(a).hex(), board_id(b).hex());
}

}  // namespace
}  // namespace braid::engine
