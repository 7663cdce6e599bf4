// FuseLink's NIC choice and the cut of a message over NICs and streams.
#include <gtest/gtest.h>

#include "net/nic_choice.h"

namespace braid::net {
namespace {

ChoiceInput input(int nics, int direct, uint32_t local_idle, uint32_t remote_idle, size_t bytes) {
  ChoiceInput in;
  in.nic_count = nics;
  in.direct = direct;
  in.local_idle = local_idle;
  in.remote_idle = remote_idle;
  in.bytes = bytes;
  in.stripe_min_bytes = 1 << 20;
  return in;
}

TEST(NetChoice, DirectNicWhenIdle) {
  EXPECT_EQ(choose_nics(Schedule::FuseLink, input(4, 2, 0xf, 0xf, 1000)), 1u << 2);
}

TEST(NetChoice, IdleIndirectNicWhenDirectBusy) {
  // NICs 0 and 1 (direct) busy here; NIC 3 idle on both sides, NIC 2 idle here but busy at the
  // receiver.
  uint32_t got = choose_nics(Schedule::FuseLink, input(4, 1, 0b1100, 0b1011, 1000));
  EXPECT_EQ(got, 1u << 3);
}

TEST(NetChoice, DirectNicWhenNothingIsIdle) {
  EXPECT_EQ(choose_nics(Schedule::FuseLink, input(4, 0, 0, 0xf, 1 << 22)), 1u);
  EXPECT_EQ(choose_nics(Schedule::FuseLink, input(4, 3, 0xf, 0, 1 << 22)), 1u << 3);
}

TEST(NetChoice, LargeMessagesStripeOverEveryIdleNic) {
  EXPECT_EQ(choose_nics(Schedule::FuseLink, input(4, 0, 0xf, 0xf, 1 << 20)), 0xfu);
  EXPECT_EQ(choose_nics(Schedule::FuseLink, input(4, 0, 0b1011, 0xf, 1 << 20)), 0b1011u);
  // Direct busy: the idle indirect ones, striped.
  EXPECT_EQ(choose_nics(Schedule::FuseLink, input(4, 0, 0b0110, 0xf, 1 << 20)), 0b0110u);
}

TEST(NetChoice, SmallMessagesTakeIdleIndirectNicsInTurn) {
  ChoiceInput in = input(4, 0, 0b1010, 0xf, 100);
  uint32_t seen = 0;
  for (uint32_t r = 0; r < 4; ++r) {
    in.rotate = r;
    uint32_t m = choose_nics(Schedule::FuseLink, in);
    EXPECT_EQ(__builtin_popcount(m), 1);
    EXPECT_EQ(m & ~0b1010u, 0u);
    seen |= m;
  }
  EXPECT_EQ(seen, 0b1010u);
}

TEST(NetChoice, OtherSchedules) {
  EXPECT_EQ(choose_nics(Schedule::Direct, input(4, 2, 0, 0, 1 << 22)), 1u << 2);
  EXPECT_EQ(choose_nics(Schedule::Stripe, input(4, 2, 0, 0, 1 << 22)), 0xfu);
  EXPECT_EQ(choose_nics(Schedule::Stripe, input(4, 2, 0, 0, 10)), 1u << 2);
  EXPECT_EQ(parse_schedule("direct"), Schedule::Direct);
  EXPECT_EQ(parse_schedule("stripe"), Schedule::Stripe);
  EXPECT_EQ(parse_schedule("fuselink"), Schedule::FuseLink);
}

constexpr int64_t kMs = 1000000;

TEST(NetChoiceDamper, NicThatStaysFreeIsUsableAtOnce) {
  ChoiceDamper d(2 * kMs, 16 * kMs);
  EXPECT_EQ(d.filter(0b01, 2, 1000 * kMs), 0b01u);  // NIC 1 busy
  EXPECT_EQ(d.filter(0b11, 2, 1001 * kMs), 0b11u);  // free again: no hold learned yet
  EXPECT_EQ(d.hold_ns(1), 0);
}

TEST(NetChoiceDamper, FlapsEarnAGrowingHoldUpToTheCap) {
  ChoiceDamper d(2 * kMs, 8 * kMs);
  int64_t t = 1000 * kMs;  // clock times are never 0
  d.filter(0b01, 2, t);               // busy
  d.filter(0b11, 2, t += kMs);        // free
  d.filter(0b01, 2, t += kMs);        // busy again soon: a flap
  EXPECT_EQ(d.hold_ns(1), 2 * kMs);
  EXPECT_EQ(d.filter(0b11, 2, t + kMs), 0b01u);      // held
  EXPECT_EQ(d.filter(0b11, 2, t + 2 * kMs), 0b11u);  // hold served
  t += 2 * kMs;
  d.filter(0b01, 2, t += kMs);        // flaps again
  EXPECT_EQ(d.hold_ns(1), 4 * kMs);
  for (int i = 0; i < 5; ++i) {
    d.filter(0b11, 2, t += d.hold_ns(1));
    d.filter(0b01, 2, t += kMs);
  }
  EXPECT_EQ(d.hold_ns(1), 8 * kMs);   // capped
  EXPECT_EQ(d.filter(0b11, 2, t + 7 * kMs), 0b01u);
}

TEST(NetChoiceDamper, LongCalmForgetsTheHold) {
  ChoiceDamper d(2 * kMs, 8 * kMs);
  int64_t t = 1000 * kMs;  // clock times are never 0
  d.filter(0b01, 2, t);
  d.filter(0b11, 2, t += kMs);
  d.filter(0b01, 2, t += kMs);
  ASSERT_EQ(d.hold_ns(1), 2 * kMs);
  d.filter(0b11, 2, t += 3 * kMs);    // free, hold served
  EXPECT_EQ(d.filter(0b11, 2, t += 40 * kMs), 0b11u);  // a long calm
  EXPECT_EQ(d.hold_ns(1), 0);
}

void expect_exact_cover(const std::vector<Piece>& pieces, size_t bytes) {
  size_t at = 0;
  for (const Piece& p : pieces) {
    EXPECT_EQ(p.offset, at);
    at += p.bytes;
  }
  EXPECT_EQ(at, bytes);
}

TEST(NetChoice, CutCoversTheMessageExactly) {
  for (size_t bytes : {size_t(0), size_t(1), size_t(4095), size_t(65536), size_t(1 << 20) + 3, size_t(64) << 20}) {
    for (uint32_t mask : {1u, 3u, 0b1010u, 0xfu}) {
      for (int streams : {1, 2, 4}) {
        auto pieces = cut_message(mask, bytes, {}, streams, 64 << 10);
        ASSERT_FALSE(pieces.empty());
        expect_exact_cover(pieces, bytes);
        for (const Piece& p : pieces) EXPECT_TRUE(mask & (1u << p.nic)) << p.nic;
      }
    }
  }
}

TEST(NetChoice, CutSharesFollowWeightsAndStreams) {
  auto pieces = cut_message(0b11, 8 << 20, {1.0, 3.0}, 2, 64 << 10);
  size_t on[2] = {};
  int count[2] = {};
  for (const Piece& p : pieces) {
    on[p.nic] += p.bytes;
    count[p.nic]++;
  }
  EXPECT_NEAR(double(on[1]) / double(on[0]), 3.0, 0.01);
  EXPECT_EQ(count[0], 2);
  EXPECT_EQ(count[1], 2);
  // Too small to share: one NIC, one piece.
  auto small = cut_message(0b11, 1000, {}, 4, 64 << 10);
  ASSERT_EQ(small.size(), 1u);
  EXPECT_EQ(small[0].bytes, 1000u);
}

}  // namespace
}  // namespace braid::net
