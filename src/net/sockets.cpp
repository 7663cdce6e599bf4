#include "net/sockets.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "net/clock.h"

namespace braid::net {
namespace {

socklen_t to_sockaddr(const WireAddress& a, sockaddr_storage* out) {
  std::memset(out, 0, sizeof *out);
  if (a.family == AF_INET) {
    auto* v4 = reinterpret_cast<sockaddr_in*>(out);
    v4->sin_family = AF_INET;
    v4->sin_port = a.port;
    std::memcpy(&v4->sin_addr, a.addr, 4);
    return sizeof(sockaddr_in);
  }
  auto* v6 = reinterpret_cast<sockaddr_in6*>(out);
  v6->sin6_family = AF_INET6;
  v6->sin6_port = a.port;
  std::memcpy(&v6->sin6_addr, a.addr, 16);
  return sizeof(sockaddr_in6);
}

void from_sockaddr(const sockaddr_storage& s, WireAddress* a) {
  std::memset(a, 0, sizeof *a);
  a->family = uint8_t(s.ss_family);
  if (s.ss_family == AF_INET) {
    auto* v4 = reinterpret_cast<const sockaddr_in*>(&s);
    a->port = v4->sin_port;
    std::memcpy(a->addr, &v4->sin_addr, 4);
  } else {
    auto* v6 = reinterpret_cast<const sockaddr_in6*>(&s);
    a->port = v6->sin6_port;
    std::memcpy(a->addr, &v6->sin6_addr, 16);
  }
}

int bound_socket(const Nic& nic) {
  int fd = socket(nic.addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_storage local = nic.addr;
  if (bind(fd, reinterpret_cast<sockaddr*>(&local), nic.addr_len) != 0) {
    int e = errno;
    close(fd);
    errno = e;
    return -1;
  }
  return fd;
}

int remaining_ms(int64_t deadline) {
  int64_t left = (deadline - now_ns()) / 1000000;
  return left < 0 ? 0 : int(left);
}

}  // namespace

bool wire_address_valid(const WireAddress& a) {
  return (a.family == AF_INET || a.family == AF_INET6) && a.port != 0;
}

void set_stream_options(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

Result listen_on(const Nic& nic, int* fd, WireAddress* where) {
  int s = bound_socket(nic);
  if (s < 0) return fail(Result::SystemError, "binding a listener to %s (%s): %s", nic.name.c_str(), nic.address.c_str(), strerror(errno));
  if (::listen(s, 256) != 0) {
    int e = errno;
    close(s);
    return fail(Result::SystemError, "listen on %s: %s", nic.address.c_str(), strerror(e));
  }
  fcntl(s, F_SETFL, fcntl(s, F_GETFL) | O_NONBLOCK);
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  getsockname(s, reinterpret_cast<sockaddr*>(&addr), &len);
  from_sockaddr(addr, where);
  *fd = s;
  return Result::Success;
}

Result start_connect(const Nic& local, const WireAddress& to, int* fd) {
  if (!wire_address_valid(to)) return fail(Result::InvalidArgument, "connect: invalid peer address (family %d)", to.family);
  if (to.family != local.addr.ss_family)
    return fail(Result::InvalidArgument, "connect: the peer's address family %d differs from NIC %s's", to.family, local.name.c_str());
  int s = bound_socket(local);
  if (s < 0) return fail(Result::SystemError, "binding to %s: %s", local.address.c_str(), strerror(errno));
  set_stream_options(s);
  sockaddr_storage peer;
  socklen_t len = to_sockaddr(to, &peer);
  if (::connect(s, reinterpret_cast<sockaddr*>(&peer), len) != 0 && errno != EINPROGRESS) {
    int e = errno;
    close(s);
    return fail(Result::RemoteError, "connect from %s: %s", local.address.c_str(), strerror(e));
  }
  *fd = s;
  return Result::Success;
}

int connect_status(int fd) {
  pollfd p{fd, POLLOUT, 0};
  if (poll(&p, 1, 0) <= 0) return 0;
  int err = 0;
  socklen_t len = sizeof err;
  getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
  return err ? -err : 1;
}

Result finish_connect(int fd, int timeout_ms) {
  int64_t deadline = now_ns() + int64_t(timeout_ms) * 1000000;
  for (;;) {
    int st = connect_status(fd);
    if (st == 1) return Result::Success;
    if (st < 0) return fail(Result::RemoteError, "connect: %s", strerror(-st));
    if (now_ns() > deadline) return fail(Result::RemoteError, "connect: no answer in %d ms", timeout_ms);
    pollfd p{fd, POLLOUT, 0};
    poll(&p, 1, remaining_ms(deadline));
  }
}

Result read_exact(int fd, void* buf, size_t n, int timeout_ms) {
  int64_t deadline = now_ns() + int64_t(timeout_ms) * 1000000;
  size_t got = 0;
  while (got < n) {
    long r = read_some(fd, static_cast<char*>(buf) + got, n - got);
    if (r == -1) return fail(Result::RemoteError, "connection closed by the peer during set-up");
    if (r == -2) return fail(Result::RemoteError, "reading during set-up: %s", strerror(errno));
    got += size_t(r);
    if (got == n) break;
    if (now_ns() > deadline) return fail(Result::RemoteError, "set-up: the peer sent %zu of %zu bytes in %d ms", got, n, timeout_ms);
    pollfd p{fd, POLLIN, 0};
    poll(&p, 1, remaining_ms(deadline));
  }
  return Result::Success;
}

Result write_exact(int fd, const void* buf, size_t n, int timeout_ms) {
  int64_t deadline = now_ns() + int64_t(timeout_ms) * 1000000;
  size_t put = 0;
  while (put < n) {
    ssize_t r = send(fd, static_cast<const char*>(buf) + put, n - put, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (r > 0) {
      put += size_t(r);
      continue;
    }
    if (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
      return fail(Result::RemoteError, "writing during set-up: %s", strerror(errno));
    if (now_ns() > deadline) return fail(Result::RemoteError, "set-up: could not write %zu bytes in %d ms", n, timeout_ms);
    pollfd p{fd, POLLOUT, 0};
    poll(&p, 1, remaining_ms(deadline));
  }
  return Result::Success;
}

long read_some(int fd, void* buf, size_t n) {
  for (;;) {
    ssize_t r = recv(fd, buf, n, MSG_DONTWAIT);
    if (r > 0) return long(r);
    if (r == 0) return n == 0 ? 0 : -1;
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
    return -2;
  }
}

}  // namespace braid::net
