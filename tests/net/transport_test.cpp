// The TCP transport between two emulated hosts: data arrives whole and in place for every size,
// in order, over one or several NICs, whichever side posts first.
#include <gtest/gtest.h>

#include "transport_pair.h"

namespace braid::net {
namespace {
using namespace braid::net::testing;

// `lanes_a` / `lanes_b`: progress threads per NIC of each side (lanes are local: they may differ).
void round_trip(Schedule schedule, int nics, int lanes_a = 1, int lanes_b = 1, int streams = 2) {
  TcpOptions oa = options(nics, schedule), ob = options(nics, schedule);
  oa.threads_per_nic = lanes_a;
  ob.threads_per_nic = lanes_b;
  oa.streams_per_nic = ob.streams_per_nic = streams;
  ConnectedHosts h(std::move(oa), 0, std::move(ob), nics - 1);
  auto& a = h.a;
  auto& b = h.b;
  Pair& p = h.p;
  const size_t sizes[] = {0, 1, 7, 4095, 4096, 65537, 131072, (1 << 20) + 3, 8 << 20};
  uint32_t seed = 1;
  for (size_t n : sizes) {
    std::vector<unsigned char> out(n), in(n + 64, 0xee);
    fill(out, seed++);
    Request *rs = nullptr, *rr = nullptr;
    ASSERT_EQ(b->irecv(p.recv, in.data(), in.size(), &rr), Result::Success);
    ASSERT_EQ(a->isend(p.send, out.data(), n, &rs), Result::Success);
    ASSERT_TRUE(rs && rr);
    size_t sent = 0, got = 0;
    ASSERT_EQ(wait(*a, rs, &sent), Result::Success) << n;
    ASSERT_EQ(wait(*b, rr, &got), Result::Success) << n;
    EXPECT_EQ(sent, n);
    EXPECT_EQ(got, n);  // the sender's size, not the posted one
    EXPECT_TRUE(std::equal(out.begin(), out.end(), in.begin())) << n;
    EXPECT_EQ(in[n], 0xee) << "bytes written past the message";
  }
}

TEST(NetTransport, RoundTripOneNic) { round_trip(Schedule::FuseLink, 1); }
TEST(NetTransport, RoundTripTwoNicsFuseLink) { round_trip(Schedule::FuseLink, 2); }
TEST(NetTransport, RoundTripFourNicsStripe) { round_trip(Schedule::Stripe, 4); }
TEST(NetTransport, RoundTripOneNicTwoLanes) { round_trip(Schedule::FuseLink, 1, 2, 2); }
TEST(NetTransport, RoundTripTwoNicsLanesDealtUnevenly) { round_trip(Schedule::Stripe, 2, 3, 1, 4); }
TEST(NetTransport, RoundTripMoreLanesThanStreams) { round_trip(Schedule::FuseLink, 2, 4, 2, 1); }

TEST(NetTransport, ManyInFlightStayInOrderWhenTheReceiverPostsLate) {
  ConnectedHosts h(2, 1, 0);
  auto& a = h.a;
  auto& b = h.b;
  Pair& p = h.p;
  constexpr int kCount = 32;
  const size_t n = 300000;
  std::vector<std::vector<unsigned char>> out(kCount, std::vector<unsigned char>(n)), in(kCount, std::vector<unsigned char>(n));
  std::vector<Request*> rs(kCount), rr(kCount);
  for (int i = 0; i < kCount; ++i) {
    fill(out[i], 100 + i);
    ASSERT_EQ(a->isend(p.send, out[i].data(), n, &rs[i]), Result::Success);
    ASSERT_NE(rs[i], nullptr);
  }
  // The sender is ahead: its pieces wait in TCP until each receive is posted.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  for (int i = 0; i < kCount; ++i) ASSERT_EQ(b->irecv(p.recv, in[i].data(), n, &rr[i]), Result::Success);
  for (int i = 0; i < kCount; ++i) {
    ASSERT_EQ(wait(*a, rs[i]), Result::Success);
    ASSERT_EQ(wait(*b, rr[i]), Result::Success);
    EXPECT_EQ(out[i], in[i]) << i;
  }
}

// A long stream with requests reused as soon as they complete, pieces of each message on both
// NICs: every message arrives, in its own buffer.
void long_stream(int lanes) {
  TcpOptions oa = options(2), ob = options(2);
  oa.threads_per_nic = ob.threads_per_nic = lanes;
  ConnectedHosts h(std::move(oa), 0, std::move(ob), 0);
  constexpr int kDepth = 8, kCount = 300;
  const size_t n = 512 << 10;  // NCCL's message size, striped over both NICs
  std::vector<std::vector<uint64_t>> out(kDepth, std::vector<uint64_t>(n / 8)), in(kDepth, std::vector<uint64_t>(n / 8));
  std::vector<Request*> rs(kDepth, nullptr), rr(kDepth, nullptr);
  std::vector<int> msg(kDepth, -1);
  int posted = 0, finished = 0, wrong = 0;
  int64_t deadline = now_ns() + 60000000000;
  while (finished < kCount && now_ns() < deadline) {
    for (int i = 0; i < kDepth; ++i) {
      if (!rs[i] && !rr[i] && posted < kCount) {
        out[i].front() = out[i].back() = uint64_t(posted);
        ASSERT_EQ(h.b->irecv(h.p.recv, in[i].data(), n, &rr[i]), Result::Success);
        ASSERT_EQ(h.a->isend(h.p.send, out[i].data(), n, &rs[i]), Result::Success);
        ASSERT_TRUE(rs[i] && rr[i]);
        msg[i] = posted++;
      }
      bool done = false;
      if (rs[i]) {
        ASSERT_EQ(h.a->test(rs[i], &done, nullptr), Result::Success);
        if (done) rs[i] = nullptr;
      }
      if (rr[i]) {
        ASSERT_EQ(h.b->test(rr[i], &done, nullptr), Result::Success);
        if (done) {
          rr[i] = nullptr;
          wrong += in[i].front() != uint64_t(msg[i]) || in[i].back() != uint64_t(msg[i]);
          ++finished;
        }
      }
    }
  }
  EXPECT_EQ(finished, kCount) << "messages lost: the stream stalled";
  EXPECT_EQ(wrong, 0);
  EXPECT_NE(h.a->stats(h.p.send).bytes_on_nic[1], 0u);
  // A send buffer is the sender's until its own test() says done, which may come after the
  // receiver has every byte (AddressSanitizer caught `out` freed while sendmsg still held it).
  for (Request* r : rs) {
    if (r) {
      EXPECT_EQ(wait(*h.a, r), Result::Success);
    }
  }
}

TEST(NetTransport, LongStreamReusesRequestsWithoutLosingMessages) { long_stream(1); }
TEST(NetTransport, LongStreamOverTwoLanesPerNic) { long_stream(2); }

TEST(NetTransport, TooManyInFlightIsPostedAgainLater) {
  ConnectedHosts h(1, 0, 0);
  auto& b = h.b;
  Pair& p = h.p;
  std::vector<unsigned char> buf(16);
  std::vector<Request*> posted;
  Request* r = nullptr;
  for (int i = 0; i < 1000; ++i) {
    ASSERT_EQ(b->irecv(p.recv, buf.data(), buf.size(), &r), Result::Success);
    if (!r) break;
    posted.push_back(r);
  }
  EXPECT_EQ(r, nullptr);  // a full connection says "later", not an error
  EXPECT_GE(posted.size(), size_t(kNcclNetMaxRequests));
}

// A sender gone between messages leaves no broken piece behind: the receiver sees its end of the
// control connection close. (Before the receiver read that end, such a receive never ended.)
TEST(NetTransport, SenderGoneBetweenMessagesFailsTheNextReceive) {
  ConnectedHosts h(2, 0, 0);
  std::vector<unsigned char> out(1 << 20, 7), in(1 << 20);
  Request *rs = nullptr, *rr = nullptr;
  ASSERT_EQ(h.b->irecv(h.p.recv, in.data(), in.size(), &rr), Result::Success);
  ASSERT_EQ(h.a->isend(h.p.send, out.data(), out.size(), &rs), Result::Success);
  ASSERT_EQ(wait(*h.a, rs), Result::Success);
  ASSERT_EQ(wait(*h.b, rr), Result::Success);
  ASSERT_EQ(h.b->irecv(h.p.recv, in.data(), in.size(), &rr), Result::Success);
  h.a->close(h.p.send);
  h.p.send = nullptr;
  const int64_t t0 = now_ns();
  EXPECT_EQ(wait(*h.b, rr, nullptr, 5), Result::RemoteError);
  EXPECT_LT(now_ns() - t0, 2000000000);
}

TEST(NetTransport, MessageLargerThanTheReceiveIsAnError) {
  // The buffers outlive the connections: the receive fails at once, while the send may still be
  // going out from `out` until its connection is closed (ThreadSanitizer caught the test freeing
  // it first).
  std::vector<unsigned char> out(5000), in(4000);
  ConnectedHosts h(1, 0, 0);
  auto& a = h.a;
  auto& b = h.b;
  Pair& p = h.p;
  Request *rs = nullptr, *rr = nullptr;
  ASSERT_EQ(b->irecv(p.recv, in.data(), in.size(), &rr), Result::Success);
  ASSERT_EQ(a->isend(p.send, out.data(), out.size(), &rs), Result::Success);
  EXPECT_EQ(wait(*b, rr), Result::InvalidUsage);
}

TEST(NetTransport, MalformedHandlesAreRefused) {
  auto a = make_host(options(1));
  auto b = make_host(options(1));
  char handle[kNcclNetHandleMaxSize];
  Comm* c = nullptr;
  // Bytes that are no handle at all.
  std::memset(handle, 0x5a, sizeof handle);
  EXPECT_EQ(a->connect(0, handle, &c), Result::InvalidArgument);
  EXPECT_EQ(c, nullptr);
  std::memset(handle, 0, sizeof handle);
  EXPECT_EQ(a->connect(0, handle, &c), Result::InvalidArgument);
  // A real handle with the wrong secret: the listener refuses it and stays usable.
  ListenComm* l = nullptr;
  ASSERT_EQ(b->listen(0, handle, &l), Result::Success);
  char forged[kNcclNetHandleMaxSize];
  std::memcpy(forged, handle, sizeof forged);
  reinterpret_cast<ListenHandle*>(forged)->nonce ^= 1;
  Comm* accepted = nullptr;
  Result r = Result::Success;
  for (int i = 0; i < 2000 && r == Result::Success; ++i) {
    r = a->connect(0, forged, &c);
    EXPECT_EQ(b->accept(l, &accepted), Result::Success);
    EXPECT_EQ(accepted, nullptr);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(r, Result::RemoteError);
  EXPECT_EQ(c, nullptr);
  // A device out of range.
  EXPECT_EQ(a->connect(7, handle, &c), Result::InvalidArgument);
  // The genuine handle still connects.
  Pair p;
  for (int i = 0; i < 5000 && (!p.send || !p.recv); ++i) {
    if (!p.send) { ASSERT_EQ(a->connect(0, handle, &p.send), Result::Success); }
    if (!p.recv) { ASSERT_EQ(b->accept(l, &p.recv), Result::Success); }
  }
  EXPECT_TRUE(p.send && p.recv);
  b->close_listen(l);
  a->close(p.send);
  b->close(p.recv);
}

}  // namespace
}  // namespace braid::net
