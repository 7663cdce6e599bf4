// braid::FdBroker, which passes the fds of exported cuMem allocations between processes; here
// with memfds, across fork()ed processes where the test is about processes.
#include "common/fd_broker.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

namespace braid {
namespace {

const std::string kContents = "bytes a peer process wrote into its memfd before publishing it";
constexpr FdKey kPublished{7, 0x7f0000000000, 2 << 20, 42};
constexpr int kWaitMs = 5000;

int make_memfd(const std::string& contents) {
  const int fd = memfd_create("braid-fd-broker-test", MFD_CLOEXEC);
  if (fd < 0 || write(fd, contents.data(), contents.size()) != static_cast<ssize_t>(contents.size())) return -1;
  return fd;
}

FdBroker::MakeFd dup_of(int fd) {
  return [fd](const FdKey&, int* out) {
    *out = dup(fd);
    return *out >= 0 ? Result::Success : fail(Result::SystemError, "dup failed");
  };
}

std::string read_all(int fd) {
  std::string s(kContents.size() + 16, '\0');
  const ssize_t n = pread(fd, s.data(), s.size(), 0);
  s.resize(n > 0 ? static_cast<size_t>(n) : 0);
  return s;
}

// A child process serving a memfd of kContents under kPublished through a broker of its own,
// until the parent closes `release`.
struct ServingChild {
  pid_t pid = -1;
  FdBrokerAddress address;
  int release = -1;

  static ServingChild start() {
    int up[2], down[2];
    if (pipe(up) != 0 || pipe(down) != 0) return {};
    const pid_t pid = fork();
    if (pid == 0) {
      close(up[0]);
      close(down[1]);
      const int memfd = make_memfd(kContents);
      std::unique_ptr<FdBroker> broker;
      if (memfd < 0 || FdBroker::start(dup_of(memfd), &broker) != Result::Success) _exit(2);
      broker->publish(kPublished);
      const FdBrokerAddress a = broker->address();
      if (write(up[1], &a, sizeof a) != static_cast<ssize_t>(sizeof a)) _exit(3);
      char c;
      while (read(down[0], &c, 1) > 0) {
      }
      _exit(0);
    }
    close(up[1]);
    close(down[0]);
    ServingChild child;
    child.pid = pid;
    child.release = down[1];
    if (read(up[0], &child.address, sizeof child.address) != static_cast<ssize_t>(sizeof child.address))
      child.address = {};
    close(up[0]);
    return child;
  }
  // Lets the child leave; its exit status (0: it served to the end).
  int finish() {
    if (release >= 0) close(release);
    release = -1;
    int status = -1;
    waitpid(pid, &status, 0);
    return status;
  }
};

// The broker's socket address for a raw connect or bind.
socklen_t abstract_address(const FdBrokerAddress& broker, sockaddr_un* out) {
  const std::string name = fd_broker_socket_name(broker);
  *out = {};
  out->sun_family = AF_UNIX;
  std::memcpy(out->sun_path + 1, name.data(), name.size());
  return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
}

double milliseconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

TEST(FdBroker, PassesAPublishedMemfdToAnotherProcess) {
  ServingChild child = ServingChild::start();
  ASSERT_TRUE(child.address.valid());
  EXPECT_EQ(child.address.pid, static_cast<uint64_t>(child.pid));
  int fd = -1;
  ASSERT_EQ(fetch_fd(child.address, kPublished, kWaitMs, &fd), Result::Success) << last_error();
  EXPECT_EQ(read_all(fd), kContents);
  // A second ask gets a fresh fd of the same file.
  int again = -1;
  ASSERT_EQ(fetch_fd(child.address, kPublished, kWaitMs, &again), Result::Success) << last_error();
  EXPECT_NE(again, fd);
  EXPECT_EQ(read_all(again), kContents);
  close(fd);
  close(again);
  EXPECT_EQ(child.finish(), 0);
}

TEST(FdBroker, RefusesWhatItsProcessDidNotPublish) {
  ServingChild child = ServingChild::start();
  ASSERT_TRUE(child.address.valid());
  int fd = -1;
  FdKey other = kPublished;
  other[3] += 1;  // the same address and size, another allocation
  EXPECT_EQ(fetch_fd(child.address, other, kWaitMs, &fd), Result::InvalidUsage);
  EXPECT_NE(std::string(last_error()).find("not published"), std::string::npos) << last_error();
  EXPECT_EQ(fd, -1);
  EXPECT_EQ(ping_fd_broker(child.address, kWaitMs), Result::Success) << last_error();
  EXPECT_EQ(child.finish(), 0);
}

// Raw messages to the broker's socket: none may bring an fd, each is answered or closed within
// the broker's bound, and the broker serves a good request afterwards.
TEST(FdBroker, RefusesMalformedRequestsAndKeepsServing) {
  ServingChild child = ServingChild::start();
  ASSERT_TRUE(child.address.valid());
  sockaddr_un address;
  const socklen_t length = abstract_address(child.address, &address);
  for (size_t bytes : {size_t{1}, size_t{39}, size_t{40}, size_t{41}, size_t{4096}}) {
    SCOPED_TRACE("a request of " + std::to_string(bytes) + " bytes");
    const int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    ASSERT_GE(s, 0);
    ASSERT_EQ(connect(s, reinterpret_cast<const sockaddr*>(&address), length), 0);
    const std::vector<unsigned char> garbage(bytes, 0xab);
    ASSERT_EQ(send(s, garbage.data(), garbage.size(), MSG_NOSIGNAL), static_cast<ssize_t>(bytes));
    pollfd p{s, POLLIN, 0};
    ASSERT_EQ(poll(&p, 1, kWaitMs), 1);
    char reply[256];
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
    iovec io{reply, sizeof reply};
    msghdr msg{};
    msg.msg_iov = &io;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    EXPECT_GE(recvmsg(s, &msg, MSG_CMSG_CLOEXEC), 0);
    EXPECT_EQ(CMSG_FIRSTHDR(&msg), nullptr);  // no fd came
    close(s);
  }
  int fd = -1;
  ASSERT_EQ(fetch_fd(child.address, kPublished, kWaitMs, &fd), Result::Success) << last_error();
  EXPECT_EQ(read_all(fd), kContents);
  close(fd);
  EXPECT_EQ(child.finish(), 0);
}

TEST(FdBroker, ABrokerWhoseProcessDiedIsAnErrorAtOnce) {
  ServingChild child = ServingChild::start();
  ASSERT_TRUE(child.address.valid());
  ASSERT_EQ(kill(child.pid, SIGKILL), 0);
  child.finish();
  const auto start = std::chrono::steady_clock::now();
  int fd = -1;
  EXPECT_EQ(fetch_fd(child.address, kPublished, kWaitMs, &fd), Result::RemoteError);
  EXPECT_LT(milliseconds_since(start), 1000.0);
  EXPECT_NE(std::string(last_error()).find("cannot connect"), std::string::npos) << last_error();
  EXPECT_EQ(ping_fd_broker(child.address, kWaitMs), Result::RemoteError);
}

// A stopped process accepts connections (the kernel queues them) but never answers: the ask
// ends with an error when its bound passes.
TEST(FdBroker, ABrokerThatNeverAnswersIsAnErrorWithinTheBound) {
  ServingChild child = ServingChild::start();
  ASSERT_TRUE(child.address.valid());
  ASSERT_EQ(kill(child.pid, SIGSTOP), 0);
  // The stop takes effect some time after kill() returns: wait until the child has stopped.
  int status = 0;
  ASSERT_EQ(waitpid(child.pid, &status, WUNTRACED), child.pid);
  ASSERT_TRUE(WIFSTOPPED(status));
  const auto start = std::chrono::steady_clock::now();
  int fd = -1;
  EXPECT_EQ(fetch_fd(child.address, kPublished, 300, &fd), Result::RemoteError);
  const double took = milliseconds_since(start);
  EXPECT_GE(took, 250.0);
  EXPECT_LT(took, 3000.0);
  EXPECT_NE(std::string(last_error()).find("no answer"), std::string::npos) << last_error();
  kill(child.pid, SIGKILL);
  child.finish();
}

TEST(FdBroker, ForgetsTheKeyPublishedLongestAgoPastItsCapacity) {
  const int memfd = make_memfd(kContents);
  ASSERT_GE(memfd, 0);
  std::unique_ptr<FdBroker> broker;
  ASSERT_EQ(FdBroker::start(dup_of(memfd), &broker, 2), Result::Success) << last_error();
  const FdKey a{1, 0, 0, 0}, b{2, 0, 0, 0}, c{3, 0, 0, 0}, d{4, 0, 0, 0};
  auto served = [&](const FdKey& key) {
    int fd = -1;
    const bool ok = fetch_fd(broker->address(), key, kWaitMs, &fd) == Result::Success;
    if (ok) close(fd);
    return ok;
  };
  broker->publish(a);
  broker->publish(b);
  broker->publish(c);
  EXPECT_FALSE(served(a));
  EXPECT_TRUE(served(b));
  EXPECT_TRUE(served(c));
  broker->publish(b);  // now newer than c
  broker->publish(d);
  EXPECT_FALSE(served(c));
  EXPECT_TRUE(served(b));
  EXPECT_TRUE(served(d));
  broker->withdraw(b);
  EXPECT_FALSE(served(b));
  broker.reset();
  close(memfd);
}

TEST(FdBroker, AFailureToMakeTheFdReachesTheAskerWithItsReason) {
  std::unique_ptr<FdBroker> broker;
  ASSERT_EQ(FdBroker::start(
                [](const FdKey&, int*) { return fail(Result::UnhandledCudaError, "the allocation is gone"); }, &broker),
            Result::Success);
  broker->publish(kPublished);
  int fd = -1;
  EXPECT_EQ(fetch_fd(broker->address(), kPublished, kWaitMs, &fd), Result::UnhandledCudaError);
  EXPECT_NE(std::string(last_error()).find("the allocation is gone"), std::string::npos) << last_error();
  EXPECT_EQ(fd, -1);
}

// A socket bound under another process's broker name is not taken for that broker: the asker
// checks the pid serving it.
TEST(FdBroker, ASocketServedByAnotherProcessIsRefused) {
  const FdBrokerAddress impostor{static_cast<uint64_t>(getppid()), 0x5eed};
  const int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  ASSERT_GE(s, 0);
  sockaddr_un address;
  ASSERT_EQ(bind(s, reinterpret_cast<const sockaddr*>(&address), abstract_address(impostor, &address)), 0);
  ASSERT_EQ(listen(s, 4), 0);
  EXPECT_EQ(ping_fd_broker(impostor, kWaitMs), Result::SystemError);
  EXPECT_NE(std::string(last_error()).find("refused"), std::string::npos) << last_error();
  close(s);
}

TEST(FdBroker, AnAddressOfNoBrokerIsAnArgumentError) {
  int fd = -1;
  EXPECT_EQ(fetch_fd(FdBrokerAddress{}, kPublished, kWaitMs, &fd), Result::InvalidArgument);
}

}  // namespace
}  // namespace braid
