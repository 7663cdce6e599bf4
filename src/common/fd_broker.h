// Hands file descriptors to other processes of the same user on this host, on request. A CUDA
// virtual-memory (cuMem) allocation is exported as a file descriptor, which means something only
// in the process holding it, so a peer that wants to map the allocation must receive the fd
// itself: the broker's thread listens on an abstract Unix socket and passes the fd by SCM_RIGHTS.
// It serves only keys its process has published, only to processes of its own user
// (SO_PEERCRED), and every wait on either side is bounded, so a dead or stopped peer costs an
// error, never a hang. CUDA-free (tested on CPU with memfds): what a key means and how its fd
// is made are the owner's (src/peer/cumem_share.*). docs/MULTIPATH.md says why SCM_RIGHTS and
// not pidfd_getfd.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common/result.h"

namespace braid {

// Where a process's broker listens: its pid, which the socket's peer credentials must show, and
// a random nonce, so that a later process given the same pid is never taken for it. Both name
// the socket (fd_broker_socket_name).
struct FdBrokerAddress {
  uint64_t pid = 0;
  uint64_t nonce = 0;
  bool valid() const { return pid != 0 && nonce != 0; }
};

// What a peer asks for: words whose meaning is the owner's (for a cuMem allocation its device,
// base, size and block id), matched exactly against what the owner published.
using FdKey = std::array<uint64_t, 4>;

// The socket's name in the abstract namespace (without the leading NUL).
std::string fd_broker_socket_name(const FdBrokerAddress& address);

class FdBroker {
 public:
  // Makes a fresh fd for a published key when a peer asks for it; the broker sends it, then
  // closes it. Runs on the broker's thread.
  using MakeFd = std::function<Result(const FdKey&, int* fd)>;
  // Keys remembered at once; past it the one published longest ago is forgotten. Keys are a few
  // words and hold nothing (make_fd checks that a key's object still exists), so this only
  // bounds the memory of a long run.
  static constexpr size_t kDefaultCapacity = 1024;

  // Binds the socket and starts the thread that serves it until the broker is destroyed.
  static Result start(MakeFd make_fd, std::unique_ptr<FdBroker>* out, size_t capacity = kDefaultCapacity);
  ~FdBroker();
  FdBroker(const FdBroker&) = delete;
  FdBroker& operator=(const FdBroker&) = delete;

  FdBrokerAddress address() const { return address_; }
  // Lets peers ask for `key` (publishing it again makes it the newest).
  void publish(const FdKey& key);
  void withdraw(const FdKey& key);

 private:
  FdBroker() = default;
  void serve();
  void answer(int connection);
  bool is_published(const FdKey& key);

  FdBrokerAddress address_;
  MakeFd make_fd_;
  size_t capacity_ = kDefaultCapacity;
  int listener_ = -1;
  int stop_ = -1;  // an eventfd the destructor raises to end serve()
  std::thread thread_;
  std::mutex mutex_;
  std::list<FdKey> order_;  // oldest first
  std::map<FdKey, std::list<FdKey>::iterator> published_;
};

// Asks the broker at `from` for the fd published as `key`, waiting at most timeout_ms in all.
// On success *fd is a new descriptor, the caller's to close.
Result fetch_fd(const FdBrokerAddress& from, const FdKey& key, int timeout_ms, int* fd);
// Whether the broker at `from` answers within timeout_ms: it exists, runs in process `from.pid`
// and belongs to this user (a check, at set-up, that fds can be passed at all).
Result ping_fd_broker(const FdBrokerAddress& from, int timeout_ms);

}  // namespace braid
