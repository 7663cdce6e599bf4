// The copy-engine path's meeting points signal one bit that alternates between calls
// (peer_layout.h: call_bit). Here every interleaving of a few ranks' streams is explored: each rank
// runs calls 1..K, each call "raise ready; wait for every peer's ready bit; raise done; wait for every
// peer's done bit" (PeerPath::meet twice). No wait may pass on a signal a peer raised for another
// call, and no interleaving may stop short of the end. A variant without the second meeting point
// strands a rank, which the check must catch: it can fail.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "peer/peer_layout.h"

namespace braid::peer {
namespace {

struct Op {
  bool raise = false;
  int signal = 0;  // 0 ready, 1 done
  uint64_t call = 0;
};

std::vector<Op> program(int calls, bool with_done) {
  std::vector<Op> ops;
  for (int k = 1; k <= calls; ++k) {
    const auto c = static_cast<uint64_t>(k);
    ops.push_back({true, 0, c});
    ops.push_back({false, 0, c});
    if (!with_done) continue;
    ops.push_back({true, 1, c});
    ops.push_back({false, 1, c});
  }
  return ops;
}

struct Outcome {
  size_t states = 0;
  std::string early;  // a wait that passed on another call's signal, said
  bool stuck = false;  // a reachable state where no rank can go on before the end
};

// Depth-first over every interleaving. Memory per rank and signal: the bit raised last and the
// call that raised it (0: never).
Outcome explore(int ranks, int calls, bool with_done) {
  const std::vector<Op> ops = program(calls, with_done);
  using State = std::vector<size_t>;  // each rank's next operation
  Outcome out;
  std::set<State> seen;
  std::vector<State> todo{State(static_cast<size_t>(ranks), 0)};
  while (!todo.empty() && out.early.empty()) {
    State s = todo.back();
    todo.pop_back();
    if (!seen.insert(s).second) continue;
    // What each rank's signals hold: replayed from its program counter.
    std::vector<std::vector<uint64_t>> bits(ranks, std::vector<uint64_t>(2, 0)), by(ranks, std::vector<uint64_t>(2, 0));
    for (int r = 0; r < ranks; ++r)
      for (size_t i = 0; i < s[r]; ++i)
        if (ops[i].raise) bits[r][ops[i].signal] = call_bit(ops[i].call), by[r][ops[i].signal] = ops[i].call;
    bool any = false, done = true;
    for (int r = 0; r < ranks; ++r) {
      if (s[r] == ops.size()) continue;
      done = false;
      const Op& op = ops[s[r]];
      bool can = true;
      if (!op.raise)
        for (int q = 0; q < ranks && can; ++q)
          if (q != r) can = (bits[q][op.signal] & call_bit(op.call)) != 0;
      if (!can) continue;
      any = true;
      if (!op.raise)
        for (int q = 0; q < ranks; ++q)
          if (q != r && by[q][op.signal] != op.call)
            out.early = "rank " + std::to_string(r) + " passed its wait of call " + std::to_string(op.call) +
                        " on rank " + std::to_string(q) + "'s signal of call " + std::to_string(by[q][op.signal]);
      State next = s;
      ++next[r];
      todo.push_back(next);
    }
    if (!done && !any) out.stuck = true;
  }
  out.states = seen.size();
  return out;
}

TEST(CallBitProtocol, NoWaitPassesOnAnotherCallsSignalAndNoInterleavingStops) {
  for (const auto& [ranks, calls] : std::vector<std::pair<int, int>>{{2, 5}, {3, 4}, {4, 3}}) {
    const Outcome o = explore(ranks, calls, /*with_done=*/true);
    EXPECT_TRUE(o.early.empty()) << ranks << " ranks: " << o.early;
    EXPECT_FALSE(o.stuck) << ranks << " ranks";
    EXPECT_GT(o.states, 10u);
  }
}

TEST(CallBitProtocol, WithoutTheSecondMeetingPointARankCanRunAheadAndStrandItsPeer) {
  // A rank that passed call k's wait raises call k + 1's bit over call k's before its peer saw it:
  // the peer then waits for ever on a bit that is gone.
  const Outcome o = explore(2, 4, /*with_done=*/false);
  EXPECT_TRUE(o.stuck || !o.early.empty());
}

TEST(CallBitProtocol, TheBitAlternatesAndNeverReadsAsNone) {
  for (uint64_t k = 1; k < 6; ++k) {
    EXPECT_NE(call_bit(k), 0u);
    EXPECT_NE(call_bit(k), call_bit(k + 1));
    EXPECT_EQ(call_bit(k), call_bit(k + 2));
    EXPECT_NE(call_bit(k) & (~0ull >> 1), 0u);  // a released signal passes every wait
  }
}

}  // namespace
}  // namespace braid::peer
