// FuseLink's scheduling under injected load, on emulated NICs (loopback addresses): a competing
// flow moves traffic off a busy NIC within 10 ms and back after it stops, without flapping while
// it runs; and two rate-limited NICs carry at least 1.8x one NIC's throughput. The figures are
// printed; CTest keeps them in its log.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "transport_pair.h"

namespace braid::net {
namespace {
using namespace braid::net::testing;

constexpr int64_t kMs = 1000000;
constexpr int64_t kIdleNs = 2 * kMs;
constexpr double kMaxHoldMs = 8 * 2.0;  // the damper's longest hold: 8 idle windows

// Streams `bytes`-byte messages from one comm to another, `depth` in flight, until stopped;
// this thread posts both sides.
class Flow {
 public:
  Flow(Transport& from, Comm* send, Transport& to, Comm* recv, size_t bytes, int depth = 4)
      : from_(from), to_(to), send_(send), recv_(recv), out_(bytes, 3), in_(size_t(depth), std::vector<unsigned char>(bytes)) {
    thread_ = std::thread([this, depth] { run(depth); });
  }
  ~Flow() { stop(); }
  // Stops posting, waits for what is in flight; returns when the last message completed.
  int64_t stop() {
    stop_.store(true);
    if (thread_.joinable()) thread_.join();
    return last_done_ns_;
  }
  uint64_t messages() const { return messages_.load(); }
  // When its first message was posted (0: not yet).
  int64_t first_post_ns() const { return first_post_ns_.load(); }
  bool failed() const { return failed_.load(); }

 private:
  void run(int depth) {
    std::vector<Request*> rs(size_t(depth), nullptr), rr(size_t(depth), nullptr);
    for (;;) {
      bool busy = false;
      for (int i = 0; i < depth; ++i) {
        if (rr[i]) {
          bool done = false;
          if (to_.test(rr[i], &done, nullptr) != Result::Success) failed_.store(true);
          if (done) rr[i] = nullptr;
        }
        if (rs[i]) {
          bool done = false;
          if (from_.test(rs[i], &done, nullptr) != Result::Success) failed_.store(true);
          if (done) {
            rs[i] = nullptr;
            messages_++;
            last_done_ns_ = now_ns();
          }
        }
        if (!rs[i] && !rr[i] && !stop_.load() && !failed_.load()) {
          to_.irecv(recv_, in_[size_t(i)].data(), in_[size_t(i)].size(), &rr[i]);
          int64_t t = now_ns();
          from_.isend(send_, out_.data(), out_.size(), &rs[i]);
          if (rs[i] && first_post_ns_.load() == 0) first_post_ns_.store(t);
        }
        busy |= rs[i] || rr[i];
      }
      if (!busy && (stop_.load() || failed_.load())) return;
      // Stopped, and what is in flight does not complete: a lost message; fail, do not hang.
      if (stop_.load() && stop_deadline_ == 0) stop_deadline_ = now_ns() + 10000000000;
      if (stop_deadline_ && now_ns() > stop_deadline_) {
        failed_.store(true);
        return;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }
  Transport& from_;
  Transport& to_;
  Comm* send_;
  Comm* recv_;
  std::vector<unsigned char> out_;
  std::vector<std::vector<unsigned char>> in_;
  std::atomic<bool> stop_{false}, failed_{false};
  std::atomic<uint64_t> messages_{0};
  int64_t last_done_ns_ = 0;
  int64_t stop_deadline_ = 0;
  std::atomic<int64_t> first_post_ns_{0};
  std::thread thread_;
};

// Waits until `comm`'s latest NIC set is `mask`; returns when it changed to it (0: never, in
// `limit_ns`).
int64_t wait_for_mask(TcpTransport& t, Comm* comm, uint32_t mask, int64_t limit_ns, int64_t since = 0) {
  int64_t deadline = now_ns() + limit_ns;
  while (now_ns() < deadline) {
    CommStats s = t.stats(comm);
    if (s.last_mask == mask && s.last_change_ns >= since) return s.last_change_ns;
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  return 0;
}

// One sending host with two GPUs' workers (two transports sharing the host's NIC monitor) and
// one receiving host. The older worker is the competing flow: pinned to its direct NIC and paced
// at 200 MB/s with 16 messages posted, so it keeps work posted even when this 2-core machine's
// scheduler leaves its thread waiting for milliseconds (steady load, not a series of bursts).
struct TwoWorkerHosts {
  std::shared_ptr<NicMonitor> board = std::make_shared<NicMonitor>(2, kIdleNs);
  std::unique_ptr<TcpTransport> older, younger, receiver;
  TwoWorkerHosts() {
    TcpOptions o = options(2);
    o.monitor = board;
    o.idle_ns = kIdleNs;
    TcpOptions pinned = o;
    pinned.schedule = Schedule::Direct;
    pinned.rate_bytes_per_s = 200e6;
    older = make_host(pinned);  // created first: its workers rank first on a shared NIC
    younger = make_host(o);
    receiver = make_host(options(2));
  }
};
constexpr int kCompetingDepth = 16;

struct Movement {
  bool settled = false, moved = false, returned = false, failed = false;
  double move_ms = 0, back_ms = 0, hold_ms = 0;
  uint32_t flaps = 0;      // changes of the flow's NIC set during 300 ms of steady competing load
  uint32_t held_mask = 0;  // its NIC set at the end of them
  // The bounds: off the busy NIC within 10 ms; back within 10 ms of the idle window and any hold
  // the damper learned; no change while the competing load is steady.
  bool within_bounds(uint32_t during) const {
    return move_ms <= 10.0 && back_ms <= 2.0 + hold_ms + 10.0 && flaps == 0 && held_mask == during;
  }
};

// A flow from the younger worker's NIC `flow_nic`; once it has settled on the NICs `before`, the
// older worker starts a steady flow on its NIC `competing_nic`; the flow must move to `during`,
// hold there, and return to `before` when the competing flow stops.
Movement competing_flow(int flow_nic, size_t flow_bytes, int competing_nic, uint32_t before, uint32_t during) {
  Movement m;
  TwoWorkerHosts h;
  Pair f = connect_pair(*h.younger, flow_nic, *h.receiver, flow_nic);
  Pair c = connect_pair(*h.older, competing_nic, *h.receiver, competing_nic);
  {
    Flow flow(*h.younger, f.send, *h.receiver, f.recv, flow_bytes);
    TcpTransport& t = *h.younger;
    m.settled = wait_for_mask(t, f.send, before, 2000 * kMs) != 0;
    auto competitor = std::make_unique<Flow>(*h.older, c.send, *h.receiver, c.recv, 256 << 10, kCompetingDepth);
    // From the competing flow's first message (its thread may start late on a busy machine).
    while (competitor->first_post_ns() == 0) std::this_thread::sleep_for(std::chrono::microseconds(50));
    int64_t first = competitor->first_post_ns();
    int64_t moved = m.settled ? wait_for_mask(t, f.send, during, 2000 * kMs, first) : 0;
    m.moved = moved != 0;
    m.move_ms = double(moved - first) / 1e6;
    uint32_t changes = t.stats(f.send).mask_changes;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    CommStats held = t.stats(f.send);
    m.flaps = held.mask_changes - changes;
    m.held_mask = held.last_mask;
    m.hold_ms = double(t.damper_hold_ns(f.send, __builtin_ctz(before))) / 1e6;
    int64_t stopped = competitor->stop();
    m.failed = competitor->failed() || competitor->messages() < 10;
    int64_t back = m.moved ? wait_for_mask(t, f.send, before, 2000 * kMs) : 0;
    m.returned = back != 0;
    // The test thread may see the competitor's last completion after the NIC thread did: a
    // return up to that much early reads as 0.
    m.back_ms = std::max(0.0, double(back - stopped) / 1e6);
    flow.stop();
    m.failed |= flow.failed();
  }
  h.younger->close(f.send);
  h.older->close(c.send);
  h.receiver->close(f.recv);
  h.receiver->close(c.recv);
  return m;
}

// Timing on this shared 2-core machine is noisy: up to three tries, each printed; the behaviour
// (moving at all, returning at all, no failure) must hold in every one.
void expect_movement(const char* what, int flow_nic, size_t flow_bytes, int competing_nic, uint32_t before,
                     uint32_t during) {
  bool ok = false;
  for (int attempt = 1; attempt <= 3 && !ok; ++attempt) {
    Movement m = competing_flow(flow_nic, flow_bytes, competing_nic, before, during);
    ASSERT_TRUE(m.settled) << "the flow never settled on NICs " << before;
    ASSERT_TRUE(m.moved) << "the flow never left the busy NIC";
    ASSERT_TRUE(m.returned) << "the flow never came back";
    ASSERT_FALSE(m.failed);
    printf("%s, try %d: moved off the busy NIC %.2f ms after the competing flow started, back %.2f ms after "
           "it stopped (idle window 2 ms, hold %.1f ms); %u changes during 300 ms of steady load\n",
           what, attempt, m.move_ms, m.back_ms, m.hold_ms, m.flaps);
    ok = m.within_bounds(during);
  }
  EXPECT_TRUE(ok) << "out of bounds in three tries (see the figures above)";
}

// FuseLink's main case: a GPU borrows an idle NIC (large messages striped over both), and hands
// it back as soon as the NIC's own GPU sends.
TEST(NetSchedule, CompetingFlowOnABorrowedNicPushesTrafficBack) {
  expect_movement("borrowed NIC", 0, 256 << 10, 1, 0b11, 0b01);
}

// The direct NIC gets a higher-priority flow (another GPU sharing it): small messages move to the
// idle indirect NIC, and come back when it stops.
TEST(NetSchedule, CompetingFlowOnTheDirectNicMovesTrafficToAnIdleNic) {
  expect_movement("direct NIC", 0, 64 << 10, 0, 0b01, 0b10);
}

double throughput_mb_s(int nics, double rate_mb_s) {
  TcpOptions o = options(nics);
  o.rate_bytes_per_s = rate_mb_s * 1e6;
  ConnectedHosts h(o, 0, options(nics), 0);
  const size_t message = 1 << 20;
  const int count = int(rate_mb_s * 0.4);  // about 0.4 s on one NIC
  std::vector<unsigned char> out(message, 9);
  std::vector<std::vector<unsigned char>> in(8, std::vector<unsigned char>(message));
  int64_t t0 = now_ns();
  std::vector<Request*> rs(8, nullptr), rr(8, nullptr);
  int posted = 0, finished = 0;
  while (finished < count) {
    for (size_t i = 0; i < 8; ++i) {
      if (!rs[i] && !rr[i] && posted < count) {
        h.b->irecv(h.p.recv, in[i].data(), message, &rr[i]);
        h.a->isend(h.p.send, out.data(), message, &rs[i]);
        ++posted;
      }
      bool done = false;
      if (rr[i]) {
        EXPECT_EQ(h.b->test(rr[i], &done, nullptr), Result::Success);
        if (done) rr[i] = nullptr;
      }
      if (rs[i]) {
        EXPECT_EQ(h.a->test(rs[i], &done, nullptr), Result::Success);
        if (done) {
          rs[i] = nullptr;
          ++finished;
        }
      }
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  return double(count) * double(message) / (double(now_ns() - t0) * 1e-9) / 1e6;
}

// Throughput is at the mercy of this shared machine's scheduler: up to three tries, each printed.
// A try counts only when one NIC reached its limit (else the machine, not the NIC, was the
// bottleneck and the ratio means nothing).
TEST(NetSchedule, TwoRateLimitedNicsCarryAtLeast1_8xOne) {
  const double rate = 50;  // MB/s per emulated NIC
  bool ok = false;
  for (int attempt = 1; attempt <= 3 && !ok; ++attempt) {
    double one = throughput_mb_s(1, rate);
    double two = throughput_mb_s(2, rate);
    printf("emulated NICs of %.0f MB/s, try %d: 1 NIC %.1f MB/s, 2 NICs %.1f MB/s, ratio %.2f\n", rate, attempt,
           one, two, two / one);
    EXPECT_LE(one, rate * 1.1) << "the rate limit does not hold";
    EXPECT_LE(two, 2 * rate * 1.1) << "the rate limit does not hold";
    ok = one >= 0.9 * rate && two >= 1.8 * one;
  }
  EXPECT_TRUE(ok) << "2 NICs never reached 1.8x one NIC at its limit in three tries";
}

}  // namespace
}  // namespace braid::net
