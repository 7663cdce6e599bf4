// Two TCP transports standing for two hosts in one test process, over loopback addresses as
// emulated NICs, and helpers to connect them and move messages.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "net/clock.h"
#include "net/tcp_transport.h"
#include "net/wire.h"

namespace braid::net::testing {

inline std::vector<Nic> loopback_nics(int count) {
  std::vector<Nic> nics;
  for (int i = 0; i < count; ++i) {
    Nic n;
    EXPECT_TRUE(parse_address("127.0.0." + std::to_string(i + 1), &n));
    nics.push_back(n);
  }
  return nics;
}

inline std::unique_ptr<TcpTransport> make_host(TcpOptions o) {
  std::unique_ptr<TcpTransport> t;
  EXPECT_EQ(make_tcp_transport(std::move(o), &t), Result::Success);
  return t;
}

inline TcpOptions options(int nics, Schedule schedule = Schedule::FuseLink) {
  TcpOptions o;
  o.nics = loopback_nics(nics);
  o.schedule = schedule;
  o.setup_timeout_ms = 5000;
  return o;
}

// One NIC, and a set-up deadline short enough for a test to see it pass.
inline TcpOptions short_setup_options() {
  TcpOptions o = options(1);
  o.setup_timeout_ms = 300;
  return o;
}

struct Pair {
  Comm* send = nullptr;
  Comm* recv = nullptr;
};

// Connects `from` (NIC from_nic) to `to` (NIC to_nic), calling connect and accept in turn from
// this one thread, as NCCL's proxy thread does.
inline Pair connect_pair(TcpTransport& from, int from_nic, TcpTransport& to, int to_nic) {
  Pair p;
  char handle[kNcclNetHandleMaxSize];
  ListenComm* l = nullptr;
  EXPECT_EQ(to.listen(to_nic, handle, &l), Result::Success);
  int64_t deadline = now_ns() + 10000000000;
  while ((!p.send || !p.recv) && now_ns() < deadline) {
    if (!p.send) { EXPECT_EQ(from.connect(from_nic, handle, &p.send), Result::Success); }
    if (!p.recv) { EXPECT_EQ(to.accept(l, &p.recv), Result::Success); }
  }
  to.close_listen(l);
  EXPECT_TRUE(p.send && p.recv);
  return p;
}

// Two hosts joined by one connection, closed at the end of the test.
struct ConnectedHosts {
  std::unique_ptr<TcpTransport> a, b;
  Pair p;
  ConnectedHosts(TcpOptions oa, int a_nic, TcpOptions ob, int b_nic)
      : a(make_host(std::move(oa))), b(make_host(std::move(ob))), p(connect_pair(*a, a_nic, *b, b_nic)) {}
  ConnectedHosts(int nics, int a_nic, int b_nic, Schedule s = Schedule::FuseLink)
      : ConnectedHosts(options(nics, s), a_nic, options(nics, s), b_nic) {}
  ~ConnectedHosts() {
    if (p.send) a->close(p.send);
    if (p.recv) b->close(p.recv);
  }
};

// Posts until a request is granted, then tests it to completion (or error / deadline).
inline Result wait(Transport& t, Request* r, size_t* bytes = nullptr, double seconds = 20) {
  int64_t deadline = now_ns() + int64_t(seconds * 1e9);
  for (;;) {
    bool done = false;
    size_t b = 0;
    Result res = t.test(r, &done, &b);
    if (res != Result::Success) return res;
    if (done) {
      if (bytes) *bytes = b;
      return Result::Success;
    }
    if (now_ns() > deadline) return Result::InternalError;
    std::this_thread::yield();
  }
}

inline void fill(std::vector<unsigned char>& v, uint32_t seed) {
  uint32_t x = seed * 2654435761u + 1;
  for (auto& c : v) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    c = static_cast<unsigned char>(x);
  }
}

}  // namespace braid::net::testing
