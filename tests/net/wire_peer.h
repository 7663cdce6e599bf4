// A sender made by hand from raw sockets, speaking braid's wire protocol (wire.h) byte by byte, so
// tests and the fuzzer can send what a real transport never would: silence, half a hello,
// overlapping or out-of-range pieces. The listener under test is driven by `accept` calls from the
// same thread, as NCCL's proxy thread does.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <functional>
#include <vector>

#include "net/clock.h"
#include "net/wire.h"

namespace braid::net::testing {

// A blocking TCP connection to `to` (loopback in tests); -1 on failure.
inline int raw_connect(const WireAddress& to) {
  int fd = socket(to.family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_storage ss{};
  socklen_t len = 0;
  if (to.family == AF_INET) {
    auto* v4 = reinterpret_cast<sockaddr_in*>(&ss);
    v4->sin_family = AF_INET;
    v4->sin_port = to.port;
    std::memcpy(&v4->sin_addr, to.addr, 4);
    len = sizeof *v4;
  } else {
    auto* v6 = reinterpret_cast<sockaddr_in6*>(&ss);
    v6->sin6_family = AF_INET6;
    v6->sin6_port = to.port;
    std::memcpy(&v6->sin6_addr, to.addr, 16);
    len = sizeof *v6;
  }
  if (connect(fd, reinterpret_cast<sockaddr*>(&ss), len) != 0) {
    close(fd);
    return -1;
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  timeval limit{0, 200000};  // a receiver that stopped reading fails a send, never hangs it
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit);
  return fd;
}

// Writes all n bytes (blocking); false when the peer closed or reset.
inline bool send_all(int fd, const void* p, size_t n) {
  const char* c = static_cast<const char*>(p);
  while (n > 0) {
    ssize_t r = send(fd, c, n, MSG_NOSIGNAL);
    if (r <= 0) return false;
    c += r;
    n -= size_t(r);
  }
  return true;
}

// Whether the other end closed `fd` within `ms` (a read sees the end, or a reset).
inline bool closed_by_peer(int fd, int ms) {
  const int64_t deadline = now_ns() + int64_t(ms) * 1000000;
  char b[256];
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    int left = int(std::max<int64_t>(0, (deadline - now_ns()) / 1000000));
    if (poll(&p, 1, left) <= 0) return false;
    ssize_t r = recv(fd, b, sizeof b, MSG_DONTWAIT);
    if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) return true;
  }
}

// A sender: the control connection and its hello, the listener's reply, then data streams.
struct WirePeer {
  ListenHandle handle{};
  uint64_t connection = 0x1234;
  int control = -1;
  std::vector<int> streams;
  std::vector<WireAddress> data_addrs;

  explicit WirePeer(const void* listen_handle) { std::memcpy(&handle, listen_handle, sizeof handle); }
  ~WirePeer() {
    if (control >= 0) close(control);
    for (int fd : streams) close(fd);
  }
  WirePeer(const WirePeer&) = delete;
  WirePeer& operator=(const WirePeer&) = delete;

  bool send_hello(uint32_t nic_count, uint32_t streams_per_nic) {
    control = raw_connect(handle.control);
    Hello h{kWireMagic, WireKind::Hello, handle.nonce, connection, nic_count, streams_per_nic};
    return control >= 0 && send_all(control, &h, sizeof h);
  }
  // Reads the reply, calling `pump` (the listener's accept) while it waits; false after `ms`.
  bool read_reply(const std::function<void()>& pump, int ms = 3000) {
    std::vector<uint8_t> buf(sizeof(Reply));
    size_t got = 0;
    const int64_t deadline = now_ns() + int64_t(ms) * 1000000;
    while (now_ns() < deadline) {
      pump();
      ssize_t r = recv(control, buf.data() + got, buf.size() - got, MSG_DONTWAIT);
      if (r == 0) return false;
      if (r > 0) got += size_t(r);
      if (got < buf.size()) continue;
      Reply rep;
      std::memcpy(&rep, buf.data(), sizeof rep);
      if (rep.magic != kWireMagic || rep.nic_count == 0 || rep.nic_count > 16) return false;
      const size_t want = sizeof(Reply) + rep.nic_count * sizeof(WireAddress);
      if (buf.size() < want) {
        buf.resize(want);
        continue;
      }
      data_addrs.resize(rep.nic_count);
      std::memcpy(data_addrs.data(), buf.data() + sizeof rep, rep.nic_count * sizeof(WireAddress));
      return true;
    }
    return false;
  }
  // Opens `count` data streams on the listener's NIC 0, each with its hello.
  bool open_streams(int count) {
    for (int k = 0; k < count; ++k) {
      int fd = raw_connect(data_addrs[0]);
      if (fd < 0) return false;
      streams.push_back(fd);
      StreamHello sh{kWireMagic, WireKind::StreamHello, handle.nonce, connection, 0, uint32_t(k)};
      if (!send_all(fd, &sh, sizeof sh)) return false;
    }
    return true;
  }
  bool send_header(int stream, uint64_t seq, uint64_t offset, uint32_t bytes, uint64_t total) {
    PieceHeader h{kWireMagic, bytes, seq, total, offset};
    return send_all(streams[size_t(stream)], &h, sizeof h);
  }
  bool send_bytes(int stream, uint8_t value, size_t n) {
    std::vector<uint8_t> b(n, value);
    return send_all(streams[size_t(stream)], b.data(), n);
  }
};

}  // namespace braid::net::testing
