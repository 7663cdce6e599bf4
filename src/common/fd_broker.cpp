#include "common/fd_broker.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstring>

#include "common/log.h"

namespace braid {

namespace {

constexpr uint32_t kMagic = 0x44465242;  // "BRFD"
constexpr uint16_t kVersion = 1;
enum class Op : uint16_t { Ping = 1, Fetch = 2 };

// One message each way; SOCK_SEQPACKET keeps each whole, so a request of any other size is
// malformed, never half of a good one.
struct Request {
  uint32_t magic;
  uint16_t version;
  uint16_t op;
  FdKey key;
};
struct Reply {
  uint32_t magic;
  int32_t result;  // a Result; Success comes with the fd (for Fetch)
  char why[120];   // the broker's reason when it refuses
};

// How long the broker waits for a connected peer's request. Peers send it right after their
// connect, so only one that died or stopped in between takes this long; the broker serves one
// connection at a time, so this also bounds what such a peer costs the others.
constexpr int kRequestWaitMs = 1000;

using Clock = std::chrono::steady_clock;

int remaining_ms(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left > 0 ? static_cast<int>(left) : 0;
}

// Until `fd` has `events` (or a hang-up or error, which the read or write then reports); false
// when the deadline passes first.
bool wait_for(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int n = poll(&p, 1, remaining_ms(deadline));
    if (n > 0) return true;
    if (n == 0 || errno != EINTR) return false;
  }
}

socklen_t socket_address(const FdBrokerAddress& a, sockaddr_un* out) {
  *out = {};
  out->sun_family = AF_UNIX;
  const std::string name = fd_broker_socket_name(a);
  std::memcpy(out->sun_path + 1, name.data(), name.size());  // sun_path[0] stays 0: abstract
  return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
}

bool peer_credentials(int socket_fd, ucred* out) {
  socklen_t len = sizeof *out;
  return getsockopt(socket_fd, SOL_SOCKET, SO_PEERCRED, out, &len) == 0 && len == sizeof *out;
}

void send_reply(int connection, Result r, const char* why, int fd) {
  Reply reply{};
  reply.magic = kMagic;
  reply.result = static_cast<int32_t>(r);
  std::snprintf(reply.why, sizeof reply.why, "%s", why);
  iovec io{&reply, sizeof reply};
  msghdr msg{};
  msg.msg_iov = &io;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  if (fd >= 0) {
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
  }
  // The peer's receive queue is empty (one request, one reply), so this does not block; a peer
  // gone meanwhile costs EPIPE, not a signal.
  if (sendmsg(connection, &msg, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
    BRAID_INFO(Alloc, "fd broker: an answer to a peer was lost: %s", std::strerror(errno));
}

// The descriptors a reply carried: the first is kept, any others (a broker never sends more)
// are closed rather than leaked.
int take_passed_fd(msghdr* msg) {
  int kept = -1;
  for (cmsghdr* c = CMSG_FIRSTHDR(msg); c != nullptr; c = CMSG_NXTHDR(msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; ++i) {
      int fd = -1;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
      if (kept < 0) kept = fd;
      else close(fd);
    }
  }
  return kept;
}

// A socket connected to the broker at `to`, checked to be served by process to.pid of this user.
Result connect_to(const FdBrokerAddress& to, Clock::time_point deadline, int* out) {
  const auto pid = static_cast<unsigned long long>(to.pid);
  if (!to.valid()) return fail(Result::InvalidArgument, "fd broker: no address to reach (pid %llu)", pid);
  const int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (s < 0) return fail(Result::SystemError, "fd broker: socket: %s", std::strerror(errno));
  sockaddr_un address;
  const socklen_t length = socket_address(to, &address);
  // A full backlog answers EAGAIN (the broker is busy or stopped): try again until the deadline.
  while (connect(s, reinterpret_cast<const sockaddr*>(&address), length) != 0) {
    const int e = errno;
    if ((e == EAGAIN || e == EINTR) && remaining_ms(deadline) > 0) {
      usleep(1000);
      continue;
    }
    close(s);
    return fail(Result::RemoteError, "fd broker of process %llu: cannot connect (%s)%s", pid, std::strerror(e),
                e == ECONNREFUSED ? ": the process has exited, or runs in another network namespace" : "");
  }
  ucred cred{};
  if (!peer_credentials(s, &cred) || static_cast<uint64_t>(cred.pid) != to.pid || cred.uid != geteuid()) {
    close(s);
    return fail(Result::SystemError,
                "fd broker of process %llu: its socket is served by pid %d of uid %u (this process's uid is %u); "
                "refused",
                pid, static_cast<int>(cred.pid), static_cast<unsigned>(cred.uid), static_cast<unsigned>(geteuid()));
  }
  *out = s;
  return Result::Success;
}

Result ask(const FdBrokerAddress& from, Op op, const FdKey& key, int timeout_ms, int* fd) {
  const auto pid = static_cast<unsigned long long>(from.pid);
  const Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(std::max(timeout_ms, 0));
  int s = -1;
  BRAID_TRY(connect_to(from, deadline, &s));
  const Request request{kMagic, kVersion, static_cast<uint16_t>(op), key};
  if (!wait_for(s, POLLOUT, deadline) || send(s, &request, sizeof request, MSG_NOSIGNAL) != sizeof request) {
    const int e = errno;
    close(s);
    return fail(Result::RemoteError, "fd broker of process %llu: could not send the request (%s)", pid,
                std::strerror(e));
  }
  if (!wait_for(s, POLLIN, deadline)) {
    close(s);
    return fail(Result::RemoteError, "fd broker of process %llu: no answer within %d ms (BRAID_TIMEOUT)", pid,
                timeout_ms);
  }
  Reply reply{};
  iovec io{&reply, sizeof reply};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &io;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  const ssize_t n = recvmsg(s, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
  const int e = errno;
  close(s);
  int passed = n > 0 ? take_passed_fd(&msg) : -1;
  auto refuse = [&](Result r, const char* why) {
    if (passed >= 0) close(passed);
    return fail(r, "fd broker of process %llu: %s", pid, why);
  };
  if (n < 0) return refuse(Result::RemoteError, std::strerror(e));
  if (n == 0) return refuse(Result::RemoteError, "closed the connection without answering");
  if (n != sizeof reply || reply.magic != kMagic) return refuse(Result::InternalError, "malformed answer");
  reply.why[sizeof reply.why - 1] = '\0';
  if (reply.result != 0) {
    const bool known = reply.result > 0 && reply.result <= static_cast<int32_t>(Result::InProgress);
    return refuse(known ? static_cast<Result>(reply.result) : Result::RemoteError, reply.why);
  }
  if (op != Op::Fetch) {
    if (passed >= 0) close(passed);
    return Result::Success;
  }
  if (passed < 0) return refuse(Result::InternalError, "the answer carried no file descriptor");
  *fd = passed;
  return Result::Success;
}

}  // namespace

std::string fd_broker_socket_name(const FdBrokerAddress& address) {
  char name[64];
  std::snprintf(name, sizeof name, "braid-fd-%llu-%016llx", static_cast<unsigned long long>(address.pid),
                static_cast<unsigned long long>(address.nonce));
  return name;
}

Result FdBroker::start(MakeFd make_fd, std::unique_ptr<FdBroker>* out, size_t capacity) {
  std::unique_ptr<FdBroker> b(new FdBroker());
  b->make_fd_ = std::move(make_fd);
  b->capacity_ = std::max<size_t>(capacity, 1);
  uint64_t nonce = 0;
  for (int tries = 0; nonce == 0 && tries < 8; ++tries)
    if (getrandom(&nonce, sizeof nonce, 0) != static_cast<ssize_t>(sizeof nonce)) nonce = 0;
  if (nonce == 0) return fail(Result::SystemError, "fd broker: getrandom: %s", std::strerror(errno));
  b->address_ = {static_cast<uint64_t>(getpid()), nonce};

  b->listener_ = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (b->listener_ < 0) return fail(Result::SystemError, "fd broker: socket: %s", std::strerror(errno));
  sockaddr_un address;
  const socklen_t length = socket_address(b->address_, &address);
  if (bind(b->listener_, reinterpret_cast<const sockaddr*>(&address), length) != 0 || listen(b->listener_, 64) != 0)
    return fail(Result::SystemError, "fd broker: cannot listen on @%s: %s", fd_broker_socket_name(b->address_).c_str(),
                std::strerror(errno));
  b->stop_ = eventfd(0, EFD_CLOEXEC);
  if (b->stop_ < 0) return fail(Result::SystemError, "fd broker: eventfd: %s", std::strerror(errno));
  b->thread_ = std::thread([p = b.get()] { p->serve(); });
  BRAID_INFO(Init, "fd broker of process %d serves on @%s", getpid(), fd_broker_socket_name(b->address_).c_str());
  *out = std::move(b);
  return Result::Success;
}

FdBroker::~FdBroker() {
  if (thread_.joinable()) {
    const uint64_t one = 1;
    if (write(stop_, &one, sizeof one) != static_cast<ssize_t>(sizeof one))
      BRAID_WARN(Alloc, "fd broker: cannot stop its thread: %s", std::strerror(errno));
    thread_.join();
  }
  if (listener_ >= 0) close(listener_);
  if (stop_ >= 0) close(stop_);
}

void FdBroker::publish(const FdKey& key) {
  std::lock_guard lock(mutex_);
  auto it = published_.find(key);
  if (it != published_.end()) {
    order_.splice(order_.end(), order_, it->second);
    return;
  }
  published_.emplace(key, order_.insert(order_.end(), key));
  if (published_.size() > capacity_) {
    published_.erase(order_.front());
    order_.pop_front();
  }
}

void FdBroker::withdraw(const FdKey& key) {
  std::lock_guard lock(mutex_);
  auto it = published_.find(key);
  if (it == published_.end()) return;
  order_.erase(it->second);
  published_.erase(it);
}

bool FdBroker::is_published(const FdKey& key) {
  std::lock_guard lock(mutex_);
  return published_.count(key) != 0;
}

void FdBroker::serve() {
  for (;;) {
    pollfd p[2] = {{listener_, POLLIN, 0}, {stop_, POLLIN, 0}};
    if (poll(p, 2, -1) < 0) {
      if (errno == EINTR) continue;
      BRAID_WARN(Alloc, "fd broker: poll: %s; it stops serving", std::strerror(errno));
      return;
    }
    if (p[1].revents != 0) return;
    if ((p[0].revents & (POLLERR | POLLNVAL)) != 0) {
      BRAID_WARN(Alloc, "fd broker: its socket failed; it stops serving");
      return;
    }
    if ((p[0].revents & POLLIN) == 0) continue;
    const int connection = accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
    if (connection < 0) continue;
    answer(connection);
    close(connection);
  }
}

void FdBroker::answer(int connection) {
  ucred cred{};
  if (!peer_credentials(connection, &cred) || cred.uid != geteuid()) {
    BRAID_INFO(Alloc, "fd broker: refused pid %d of uid %u (not this process's user)", static_cast<int>(cred.pid),
               static_cast<unsigned>(cred.uid));
    send_reply(connection, Result::SystemError, "refused: the asking process belongs to another user", -1);
    return;
  }
  if (!wait_for(connection, POLLIN, Clock::now() + std::chrono::milliseconds(kRequestWaitMs))) return;
  // One byte more than a request, so that a longer message shows as one (SEQPACKET truncates).
  unsigned char bytes[sizeof(Request) + 1];
  const ssize_t n = recv(connection, bytes, sizeof bytes, MSG_DONTWAIT);
  if (n <= 0) return;  // the peer left, or sent an empty message: nothing to answer
  Request request{};
  std::memcpy(&request, bytes, std::min(sizeof request, static_cast<size_t>(n)));
  const bool well_formed = n == static_cast<ssize_t>(sizeof request) && request.magic == kMagic &&
                           request.version == kVersion &&
                           (request.op == static_cast<uint16_t>(Op::Ping) || request.op == static_cast<uint16_t>(Op::Fetch));
  if (!well_formed) {
    BRAID_INFO(Alloc, "fd broker: refused a malformed request of %zd bytes from pid %d", n, static_cast<int>(cred.pid));
    send_reply(connection, Result::InvalidArgument, "malformed request", -1);
    return;
  }
  if (request.op == static_cast<uint16_t>(Op::Ping)) return send_reply(connection, Result::Success, "", -1);
  if (!is_published(request.key)) {
    send_reply(connection, Result::InvalidUsage, "that allocation is not published by this process", -1);
    return;
  }
  int fd = -1;
  const Result made = make_fd_(request.key, &fd);
  if (made != Result::Success) return send_reply(connection, made, last_error(), -1);
  send_reply(connection, Result::Success, "", fd);
  close(fd);
}

Result fetch_fd(const FdBrokerAddress& from, const FdKey& key, int timeout_ms, int* fd) {
  return ask(from, Op::Fetch, key, timeout_ms, fd);
}

Result ping_fd_broker(const FdBrokerAddress& from, int timeout_ms) {
  int unused = -1;
  return ask(from, Op::Ping, FdKey{}, timeout_ms, &unused);
}

}  // namespace braid
