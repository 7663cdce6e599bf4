// Relays through a peer GPU's buffer (FuseLink's D1) on CPU: host memory in POSIX shared memory
// stands in for the relay GPU's, processes (fork) for the GPUs and nodes, loopback addresses for
// the NICs. A relay owner process offers the pool of NIC 1; a sender on the same host, whose
// direct NIC is NIC 0, borrows its slots for the pieces it sends on NIC 1; a receiver checks every
// byte. The parent watches the pool through its own mapping.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <string>
#include <vector>

#include "net/relay_pool.h"
#include "net/relay_shm.h"
#include "transport_pair.h"

namespace braid::net {
namespace {

using testing::fill;
using testing::loopback_nics;

constexpr size_t kSlot = 256 << 10;

std::string pool_prefix(const char* test) { return "/braid-relaytest-" + std::to_string(getpid()) + "-" + test; }

// --- the pool alone ------------------------------------------------------------------------------

TEST(NetRelayShm, OwnerOffersBorrowersAttachByTheSameRules) {
  const std::string name = pool_prefix("alone") + "-1";
  std::unique_ptr<SharedRelayPool> owner, second, borrower;
  ASSERT_EQ(SharedRelayPool::offer(name, 4 * kSlot + 100, kSlot, &owner), Result::Success);
  ASSERT_TRUE(owner);
  ASSERT_EQ(SharedRelayPool::offer(name, 8 * kSlot, kSlot, &second), Result::Success);
  EXPECT_FALSE(second) << "a live owner's pool is not replaced";
  ASSERT_EQ(SharedRelayPool::attach(name, &borrower), Result::Success);
  ASSERT_TRUE(borrower);
  EXPECT_EQ(borrower->region_bytes(), 4 * kSlot);
  std::vector<void*> got;
  while (void* s = borrower->acquire()) got.push_back(s);
  EXPECT_EQ(got.size(), 4u);
  EXPECT_EQ(owner->lent_bytes(), 4 * kSlot);  // one board, seen from both mappings
  for (void* s : got) borrower->release(s);
  // The owner's declared need and its own sends in flight come first (RelayPool's rule).
  owner->set_owner_demand(3 * kSlot);
  EXPECT_EQ(borrower->limit_bytes(), relay_limit_bytes(4 * kSlot, kSlot, 4 * kSlot + 100, 3 * kSlot));
  EXPECT_EQ(borrower->limit_bytes(), kSlot);
  owner->set_owner_demand(0);
  owner->add_owner_inflight(2 * kSlot + 1);
  EXPECT_EQ(borrower->limit_bytes(), kSlot);
  owner->add_owner_inflight(-int64_t(2 * kSlot + 1));
  EXPECT_EQ(borrower->limit_bytes(), 4 * kSlot);
  // The owner leaves: no new loans from its pool, and the name is gone.
  owner.reset();
  EXPECT_FALSE(borrower->owner_alive());
  EXPECT_EQ(borrower->acquire(), nullptr);
  std::unique_ptr<SharedRelayPool> again;
  ASSERT_EQ(SharedRelayPool::attach(name, &again), Result::Success);
  EXPECT_FALSE(again);
}

TEST(NetRelayShm, SlotsOfADeadProcessAreTakenBack) {
  const std::string name = pool_prefix("dead") + "-1";
  std::unique_ptr<SharedRelayPool> owner;
  ASSERT_EQ(SharedRelayPool::offer(name, 2 * kSlot, kSlot, &owner), Result::Success);
  ASSERT_TRUE(owner);
  pid_t child = fork();
  if (child == 0) {
    std::unique_ptr<SharedRelayPool> p;
    if (SharedRelayPool::attach(name, &p) != Result::Success || !p) _exit(2);
    _exit(p->acquire() && p->acquire() ? 0 : 3);  // dies holding both
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ(owner->lent_bytes(), 2 * kSlot);
  void* s = owner->acquire();  // finds no room, takes the dead process's slots back, lends one
  EXPECT_NE(s, nullptr);
  EXPECT_EQ(owner->lent_bytes(), kSlot);
  owner->release(s);
  EXPECT_EQ(owner->lent_bytes(), 0u);
}

// A NIC whose pool this process offered is its own GPU's: pieces on it need no relay.
TEST(NetRelayShm, NoRelayThroughThePoolOfOnesOwnNic) {
  const std::string prefix = pool_prefix("own");
  TcpOptions a;
  a.nics = loopback_nics(2);
  a.setup_timeout_ms = 5000;
  a.relay_bytes = 8 * kSlot;
  a.relay_slot_bytes = kSlot;
  a.relay_name = prefix;
  testing::ConnectedHosts h(a, 0, testing::options(2), 0);
  h.a->offer_relay(1);
  ASSERT_NE(h.a->relay_pool(1), nullptr);
  std::vector<unsigned char> out(4 << 20), in(4 << 20);
  fill(out, 5);
  Request *rs = nullptr, *rr = nullptr;
  ASSERT_EQ(h.b->irecv(h.p.recv, in.data(), in.size(), &rr), Result::Success);
  ASSERT_EQ(h.a->isend(h.p.send, out.data(), out.size(), &rs), Result::Success);
  ASSERT_EQ(testing::wait(*h.a, rs), Result::Success);
  ASSERT_EQ(testing::wait(*h.b, rr), Result::Success);
  EXPECT_EQ(in, out);
  CommStats st = h.a->stats(h.p.send);
  EXPECT_GT(st.bytes_on_nic[1], 0u);
  EXPECT_EQ(st.relayed_bytes, 0u);
  EXPECT_EQ(st.relay_fallback_bytes, 0u);
}

// --- three processes ------------------------------------------------------------------------------

bool put(int fd, const void* p, size_t n) {
  const char* c = static_cast<const char*>(p);
  while (n > 0) {
    ssize_t r = write(fd, c, n);
    if (r <= 0) return false;
    c += r;
    n -= size_t(r);
  }
  return true;
}

bool get(int fd, void* p, size_t n, double seconds = 30) {
  char* c = static_cast<char*>(p);
  int64_t deadline = now_ns() + int64_t(seconds * 1e9);
  while (n > 0) {
    pollfd pf{fd, POLLIN, 0};
    int left = int((deadline - now_ns()) / 1000000);
    if (left <= 0 || poll(&pf, 1, left) <= 0) return false;
    ssize_t r = read(fd, c, n);
    if (r <= 0) return false;
    c += r;
    n -= size_t(r);
  }
  return true;
}

bool put64(int fd, uint64_t v) { return put(fd, &v, sizeof v); }
uint64_t get64(int fd, double seconds = 30) {
  uint64_t v = ~uint64_t(0);
  return get(fd, &v, sizeof v, seconds) ? v : ~uint64_t(0) - 1;
}

// A child process and the parent's end of a socket pair to it.
struct Child {
  pid_t pid = -1;
  int fd = -1;
  // Its exit code, or -1 if it had not ended in `seconds` (then it is killed).
  int finish(double seconds) {
    if (pid <= 0) return -1;
    int64_t deadline = now_ns() + int64_t(seconds * 1e9);
    int status = 0, code = -1;
    for (;;) {
      if (waitpid(pid, &status, WNOHANG) == pid) {
        code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        break;
      }
      if (now_ns() > deadline) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        break;
      }
      usleep(1000);
    }
    pid = -1;
    close(fd);
    return code;
  }
  void kill_now() {
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);  // reaped: its pid reads as dead
    pid = -1;
    close(fd);
  }
};

Child start(const std::function<int(int)>& body) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return {};
  pid_t pid = fork();
  if (pid == 0) {
    close(sv[0]);
    _exit(body(sv[1]));
  }
  close(sv[1]);
  return {pid, sv[0]};
}

TcpOptions host(size_t relay_bytes, const std::string& prefix, double rate = 0) {
  TcpOptions o;
  o.nics = loopback_nics(2);
  o.setup_timeout_ms = 5000;
  o.rate_bytes_per_s = rate;
  o.relay_bytes = relay_bytes;
  o.relay_slot_bytes = kSlot;
  o.relay_name = prefix;
  return o;
}

std::unique_ptr<TcpTransport> make(TcpOptions o) {
  std::unique_ptr<TcpTransport> t;
  return make_tcp_transport(std::move(o), &t) == Result::Success ? std::move(t) : nullptr;
}

constexpr uint64_t kQuit = ~uint64_t(0) - 7;

// The relay GPU's process: offers NIC 1's pool, then sets its own demand as the parent says.
int owner_body(int fd, const std::string& prefix, size_t cap) {
  auto t = make(host(cap, prefix));
  if (!t) return 2;
  t->offer_relay(1);
  SharedRelayPool* pool = t->relay_pool(1);
  if (!pool) return 3;
  put64(fd, 1);
  for (;;) {
    uint64_t cmd = get64(fd, 120);
    if (cmd == kQuit) return 0;
    if (cmd > (uint64_t(1) << 40)) return 4;
    pool->set_owner_demand(cmd);
    put64(fd, 1);
  }
}

// A receiver on another node: the messages of `sizes` in turn, every byte checked. With
// `expect_error`: a receive must fail (RemoteError) before they are all in.
int receiver_body(int fd, const std::vector<size_t>& sizes, bool expect_error) {
  auto t = make(host(0, ""));
  if (!t) return 2;
  char handle[kNcclNetHandleMaxSize];
  ListenComm* l = nullptr;
  if (t->listen(0, handle, &l) != Result::Success || !put(fd, handle, sizeof handle)) return 3;
  Comm* rc = nullptr;
  for (int64_t deadline = now_ns() + 10000000000; !rc && now_ns() < deadline;)
    if (t->accept(l, &rc) != Result::Success) return 4;
  t->close_listen(l);
  if (!rc) return 5;
  for (size_t i = 0; i < sizes.size(); ++i) {
    std::vector<unsigned char> buf(sizes[i] + 64, 0xEE), want(sizes[i]);
    fill(want, uint32_t(i + 1));
    Request* r = nullptr;
    while (!r)
      if (t->irecv(rc, buf.data(), buf.size(), &r) != Result::Success) return expect_error ? 0 : 6;
    size_t got = 0;
    Result res = testing::wait(*t, r, &got, expect_error ? 10 : 30);
    if (expect_error) {
      if (res == Result::RemoteError) return 0;
      if (res != Result::Success) return 20;
      continue;
    }
    if (res != Result::Success) return 10;
    if (got != sizes[i] || std::memcmp(buf.data(), want.data(), got) != 0) return 11;
    for (size_t k = got; k < buf.size(); ++k)
      if (buf[k] != 0xEE) return 12;
  }
  t->close(rc);
  return expect_error ? 21 : 0;
}

// The sender's commands: send the next n messages one at a time (kOneByOne), or post them all
// and then wait for them (kAllAtOnce: "posted" is reported first). After each command: the first
// error (0: none), then the connection's relayed and fallen-back bytes.
constexpr uint64_t kOneByOne = 1ull << 32, kAllAtOnce = 2ull << 32, kPosted = 77;

int sender_body(int fd, const std::string& prefix, const std::vector<size_t>& sizes, double rate) {
  auto t = make(host(64 * kSlot, prefix, rate));
  if (!t) return 2;
  char handle[kNcclNetHandleMaxSize];
  if (!get(fd, handle, sizeof handle)) return 3;
  Comm* sc = nullptr;
  for (int64_t deadline = now_ns() + 10000000000; !sc && now_ns() < deadline;)
    if (t->connect(0, handle, &sc) != Result::Success) return 4;
  if (!sc) return 5;
  put64(fd, 1);
  std::vector<std::vector<unsigned char>> data(sizes.size());
  for (size_t i = 0; i < sizes.size(); ++i) {
    data[i].resize(sizes[i]);
    fill(data[i], uint32_t(i + 1));
  }
  size_t next = 0;
  for (;;) {
    uint64_t cmd = get64(fd, 120);
    if (cmd == kQuit) break;
    const size_t n = size_t(cmd & 0xffffffff);
    if (next + n > sizes.size()) return 6;
    std::vector<Request*> reqs;
    int error = 0;
    auto post = [&](size_t i) {
      Request* r = nullptr;
      while (!r && error == 0)
        if (Result res = t->isend(sc, data[i].data(), sizes[i], &r); res != Result::Success) error = int(res);
      if (r) reqs.push_back(r);
    };
    auto finish = [&](Request* r) {
      if (error) return;
      if (Result res = testing::wait(*t, r, nullptr, 30); res != Result::Success) error = int(res);
    };
    if ((cmd & ~uint64_t(0xffffffff)) == kAllAtOnce) {
      for (size_t i = next; i < next + n; ++i) post(i);
      put64(fd, kPosted);
      for (Request* r : reqs) finish(r);
    } else {
      for (size_t i = next; i < next + n; ++i) {
        post(i);
        if (!reqs.empty()) finish(reqs.back());
      }
    }
    next += n;
    CommStats st = t->stats(sc);
    put64(fd, uint64_t(error));
    put64(fd, st.relayed_bytes);
    put64(fd, st.relay_fallback_bytes);
  }
  t->close(sc);
  return 0;
}

struct Report {
  uint64_t error = ~0ull, relayed = 0, fallback = 0;
};

Report command(Child& sender, uint64_t cmd, double seconds = 60) {
  Report r;
  if (!put64(sender.fd, cmd)) return r;
  if ((cmd & ~uint64_t(0xffffffff)) == kAllAtOnce && get64(sender.fd, seconds) != kPosted) return r;
  r.error = get64(sender.fd, seconds);
  r.relayed = get64(sender.fd, seconds);
  r.fallback = get64(sender.fd, seconds);
  return r;
}

// An owner, a receiver and a sender, connected; the parent's view of the pool of NIC 1.
struct Rig {
  std::string prefix;
  Child owner, receiver, sender;
  std::unique_ptr<SharedRelayPool> pool;
  Rig(const char* test, size_t cap, const std::vector<size_t>& sizes, bool receiver_expects_error = false,
      double rate = 0)
      : prefix(pool_prefix(test)) {
    owner = start([&](int fd) { return owner_body(fd, prefix, cap); });
    EXPECT_EQ(get64(owner.fd), 1u) << "the owner offered its pool";
    EXPECT_EQ(SharedRelayPool::attach(prefix + "-1", &pool), Result::Success);
    EXPECT_TRUE(pool);
    receiver = start([&](int fd) { return receiver_body(fd, sizes, receiver_expects_error); });
    sender = start([&](int fd) { return sender_body(fd, prefix, sizes, rate); });
    char handle[kNcclNetHandleMaxSize];
    EXPECT_TRUE(get(receiver.fd, handle, sizeof handle));
    EXPECT_TRUE(put(sender.fd, handle, sizeof handle));
    EXPECT_EQ(get64(sender.fd), 1u) << "the sender connected";
  }
  void set_owner_demand(size_t bytes) {
    put64(owner.fd, bytes);
    EXPECT_EQ(get64(owner.fd), 1u);
  }
  ~Rig() {
    if (sender.pid > 0) {
      put64(sender.fd, kQuit);
      EXPECT_EQ(sender.finish(20), 0) << "sender";
    }
    if (receiver.pid > 0) {
      EXPECT_EQ(receiver.finish(20), 0) << "receiver";
    }
    put64(owner.fd, kQuit);
    EXPECT_EQ(owner.finish(20), 0) << "owner";
    // A process killed while it owned a pool leaves its name behind (a later owner replaces it).
    shm_unlink((prefix + "-0").c_str());
    shm_unlink((prefix + "-1").c_str());
  }
};

std::vector<size_t> repeat(size_t bytes, int n) { return std::vector<size_t>(size_t(n), bytes); }

TEST(NetRelay, RelayedPiecesArriveExactly) {
  std::vector<size_t> sizes = {0, 1, 4095, 200000, 1 << 20, (3 << 20) + 17, 8 << 20, 65536, (5 << 20) - 3};
  Rig rig("exact", 8 * kSlot, sizes);
  Report r = command(rig.sender, kOneByOne | sizes.size());
  EXPECT_EQ(r.error, 0u);
  EXPECT_GT(r.relayed, 0u) << "pieces on NIC 1 went through its owner's pool";
  EXPECT_EQ(r.relayed, rig.pool->relayed_bytes());
  EXPECT_LE(rig.pool->peak_lent_bytes(), 8 * kSlot);
  EXPECT_EQ(rig.pool->lent_bytes(), 0u) << "every slot back after its send completed";
  printf("relayed %llu bytes, %llu fell back; at most %zu bytes lent at once\n", (unsigned long long)r.relayed,
         (unsigned long long)r.fallback, rig.pool->peak_lent_bytes());
}

TEST(NetRelay, CapIsRespectedAndAFullPoolFallsBackToTheDirectNic) {
  std::vector<size_t> sizes = repeat(2 << 20, 24);
  Rig rig("cap", 2 * kSlot, sizes);
  // 16 messages in flight at once want far more than two slots: the rest go on the direct NIC.
  Report all = command(rig.sender, kAllAtOnce | 16);
  EXPECT_EQ(all.error, 0u);
  EXPECT_GT(all.relayed, 0u);
  EXPECT_GT(all.fallback, 0u) << "a full pool sends on the direct NIC";
  EXPECT_LE(rig.pool->peak_lent_bytes(), 2 * kSlot) << "never over the cap";
  EXPECT_EQ(rig.pool->lent_bytes(), 0u);
  // One at a time, each message finds the slots the previous one gave back.
  Report one = command(rig.sender, kOneByOne | 8);
  EXPECT_EQ(one.error, 0u);
  EXPECT_GT(one.relayed - all.relayed, 2 * kSlot) << "slots released after each send are lent again";
  EXPECT_LE(rig.pool->peak_lent_bytes(), 2 * kSlot);
  EXPECT_EQ(rig.pool->lent_bytes(), 0u);
}

TEST(NetRelay, TheOwnersOwnDemandComesFirst) {
  std::vector<size_t> sizes = repeat(4 << 20, 12);
  Rig rig("owner", 8 * kSlot, sizes);
  // The owner needs all its memory: relays refused, the pieces go on the sender's direct NIC.
  rig.set_owner_demand(8 * kSlot);
  Report none = command(rig.sender, kOneByOne | 4);
  EXPECT_EQ(none.error, 0u);
  EXPECT_EQ(none.relayed, 0u);
  EXPECT_GT(none.fallback, 0u);
  EXPECT_EQ(rig.pool->peak_lent_bytes(), 0u);
  // It needs all but one slot: relays reduced to one slot at a time.
  rig.set_owner_demand(7 * kSlot);
  Report one = command(rig.sender, kAllAtOnce | 4);
  EXPECT_EQ(one.error, 0u);
  EXPECT_GT(one.relayed, 0u);
  EXPECT_LE(rig.pool->peak_lent_bytes(), kSlot);
  // It needs nothing: relays take up to the cap again.
  rig.pool->reset_peak();
  rig.set_owner_demand(0);
  Report all = command(rig.sender, kAllAtOnce | 4);
  EXPECT_EQ(all.error, 0u);
  EXPECT_GT(all.relayed - one.relayed, 0u);
  EXPECT_GT(rig.pool->peak_lent_bytes(), kSlot);
  EXPECT_LE(rig.pool->peak_lent_bytes(), 8 * kSlot);
  EXPECT_EQ(rig.pool->lent_bytes(), 0u);
}

double seconds_since(int64_t t0) { return double(now_ns() - t0) / 1e9; }

// Two 4 MiB messages posted at once on NICs of 1 MB/s: their relay slots stay lent for about a
// second. Returns once some are lent.
std::unique_ptr<Rig> slow_transfer(const char* test) {
  auto rig = std::make_unique<Rig>(test, 4 * kSlot, repeat(4 << 20, 2), true, 1e6);
  EXPECT_TRUE(put64(rig->sender.fd, kAllAtOnce | 2));
  EXPECT_EQ(get64(rig->sender.fd), kPosted);
  SharedRelayPool& pool = *rig->pool;
  for (int64_t t0 = now_ns(); pool.lent_bytes() == 0 && seconds_since(t0) < 5;) usleep(1000);
  EXPECT_GT(pool.lent_bytes(), 0u) << "slots lent mid-transfer";
  return rig;
}

TEST(NetRelay, ReceiverDiesMidTransferSlotsComeBack) {
  auto owned = slow_transfer("rdead");
  Rig& rig = *owned;
  const int64_t t0 = now_ns();
  rig.receiver.kill_now();
  uint64_t error = get64(rig.sender.fd, 10);
  double took = seconds_since(t0);
  EXPECT_EQ(error, uint64_t(Result::RemoteError)) << "the sender sees the peer's death";
  EXPECT_LT(took, 2.0) << "no hang";
  get64(rig.sender.fd);
  get64(rig.sender.fd);
  // The sender has not closed the connection yet: its failed pieces gave their slots back.
  for (int64_t t1 = now_ns(); rig.pool->lent_bytes() > 0 && seconds_since(t1) < 2;) usleep(1000);
  EXPECT_EQ(rig.pool->lent_bytes(), 0u) << "no slot leaked";
  printf("the sender saw the error %.3f s after the receiver was killed\n", took);
}

TEST(NetRelay, SenderDiesMidTransferItsSlotsAreTakenBack) {
  auto owned = slow_transfer("sdead");
  Rig& rig = *owned;
  const int64_t t0 = now_ns();
  rig.sender.kill_now();
  EXPECT_EQ(rig.receiver.finish(5), 0) << "the receiver sees an error, no hang";
  printf("the receiver ended %.3f s after the sender was killed\n", seconds_since(t0));
  EXPECT_GT(rig.pool->lent_bytes(), 0u) << "the dead sender's slots, until someone takes them back";
  EXPECT_GT(rig.pool->reclaim_dead(), 0);
  EXPECT_EQ(rig.pool->lent_bytes(), 0u);
}

}  // namespace
}  // namespace braid::net
