// libnccl-net-braid.so as NCCL uses it: dlopen'ed, its ncclNetPlugin_v11 table driven by two
// processes (fork) that stand for two nodes, over loopback addresses as emulated NICs. Each
// process loads and initializes the plugin itself, after the fork, as a real rank would.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdarg>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "net/abi.h"
#include "net/clock.h"
#include "topo/topology.h"

namespace braid::net {
namespace {

constexpr int kSuccess = 0, kInternalError = 3, kInvalidArgument = 4;

std::atomic<int> g_warnings{0};
// Every line the plugin logged in this process. NCCL calls its logger from any thread (the plugin's
// progress threads warn when a peer dies while the caller's thread logs too), so it is locked.
std::mutex g_log_mutex;
std::string g_log;
std::string logged() {
  std::lock_guard lock(g_log_mutex);
  return g_log;
}
void test_logger(int level, unsigned long, const char*, int, const char* fmt, ...) {
  if (level == kNcclLogWarn) g_warnings++;
  char line[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  {
    std::lock_guard lock(g_log_mutex);
    g_log += line;
    g_log += '\n';
  }
  if (std::getenv("NET_TEST_VERBOSE")) fprintf(stderr, "%s\n", line);
}

// The plugin, loaded and initialized in this process; finalized (threads joined) at the end.
struct Plugin {
  void* lib = nullptr;
  NcclNetV11* net = nullptr;
  void* ctx = nullptr;
  int init_result = -1;
  Plugin() {
    lib = dlopen(BRAID_NET_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
    if (!lib) return;
    net = static_cast<NcclNetV11*>(dlsym(lib, "ncclNetPlugin_v11"));
    if (net) init_result = net->init(&ctx, 1, nullptr, test_logger, nullptr);
  }
  ~Plugin() {
    if (net && init_result == kSuccess) net->finalize(ctx);
  }
  bool ok() const { return net && init_result == kSuccess; }
};

void use_nics(const char* nics, const char* rate_mbps = "0") {
  setenv("BRAID_NET_NICS", nics, 1);
  setenv("BRAID_NET_RATE_MBPS", rate_mbps, 1);
}

// Runs `body` in a child process; its return value is the exit code.
pid_t spawn(const std::function<int()>& body) {
  pid_t pid = fork();
  if (pid == 0) _exit(body());
  return pid;
}

// The child's exit code, or -1 if it had not ended in `seconds` (then it is killed).
int child_exit(pid_t pid, double seconds) {
  int64_t deadline = now_ns() + int64_t(seconds * 1e9);
  for (;;) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (now_ns() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return -1;
    }
    usleep(1000);
  }
}

// Tests a request until done; the plugin's result otherwise (or -1 after `seconds`).
int wait_request(NcclNetV11* net, void* req, int* size, double seconds = 20) {
  int64_t deadline = now_ns() + int64_t(seconds * 1e9);
  for (;;) {
    int done = 0;
    int r = net->test(req, &done, size);
    if (r != kSuccess) return r;
    if (done) return kSuccess;
    if (now_ns() > deadline) return -1;
  }
}

uint8_t pattern(size_t i, size_t size) { return uint8_t((i * 131 + size * 7 + (i >> 12)) & 0xff); }

const std::vector<size_t> kSizes = {0, 1, 3, 1000, 4095, 4096, 65535, 65536, 200000, (1 << 20) + 5, 4 << 20, 16 << 20};

// A sender process: reads the handle from `fd`, connects on `dev`, sends every size from a
// buffer at `offset` bytes past an aligned one. 0 on success.
int sender(int fd, int dev, size_t offset) {
  Plugin p;
  if (!p.ok()) return 10;
  char handle[kNcclNetHandleMaxSize];
  if (read(fd, handle, sizeof handle) != ssize_t(sizeof handle)) return 11;
  void* comm = nullptr;
  int64_t deadline = now_ns() + 10000000000;
  while (!comm) {
    if (p.net->connect(p.ctx, dev, handle, &comm, nullptr) != kSuccess) return 12;
    if (now_ns() > deadline) return 13;
  }
  std::vector<uint8_t> storage((16 << 20) + 64);
  uint8_t* buf = storage.data() + offset;
  void* mh = nullptr;
  if (p.net->reg_mr(comm, buf, (16 << 20) + 1, kNcclPtrHost, &mh) != kSuccess) return 14;
  for (size_t size : kSizes) {
    for (size_t i = 0; i < size; ++i) buf[i] = pattern(i, size);
    void* req = nullptr;
    while (!req)
      if (p.net->isend(comm, buf, size, 0, mh, nullptr, &req) != kSuccess) return 15;
    int sent = -1;
    if (wait_request(p.net, req, &sent) != kSuccess || sent != int(size)) return 16;
  }
  p.net->dereg_mr(comm, mh);
  p.net->close_send(comm);
  return 0;
}

// The receiving side of the same exchange, in this (the test's) process.
void receive_all(Plugin& p, void* listen_comm, size_t offset) {
  void* comm = nullptr;
  int64_t deadline = now_ns() + 10000000000;
  while (!comm && now_ns() < deadline) ASSERT_EQ(p.net->accept(listen_comm, &comm, nullptr), kSuccess);
  ASSERT_NE(comm, nullptr);
  std::vector<uint8_t> storage((16 << 20) + 4096 + offset + 64);
  uint8_t* buf = storage.data() + offset;
  void* mh = nullptr;
  ASSERT_EQ(p.net->reg_mr(comm, buf, (16 << 20) + 4097, kNcclPtrHost, &mh), kSuccess);
  for (size_t size : kSizes) {
    std::memset(buf, 0xee, size + 4096);
    void* req = nullptr;
    size_t posted = size + 4096;  // room to spare: the sender's size is what counts
    int tag = 0;
    void* data = buf;
    while (!req) ASSERT_EQ(p.net->irecv(comm, 1, &data, &posted, &tag, &mh, nullptr, &req), kSuccess);
    int got = -1;
    ASSERT_EQ(wait_request(p.net, req, &got), kSuccess) << size;
    EXPECT_EQ(got, int(size));
    size_t wrong = 0;
    for (size_t i = 0; i < size; ++i) wrong += buf[i] != pattern(i, size);
    EXPECT_EQ(wrong, 0u) << "size " << size;
    EXPECT_EQ(buf[size], 0xee) << "written past the message, size " << size;
    void* flush = &flush;
    int isize = int(size);
    ASSERT_EQ(p.net->iflush(comm, 1, &data, &isize, &mh, &flush), kSuccess);
    EXPECT_EQ(flush, nullptr);  // host memory: nothing to flush
  }
  p.net->dereg_mr(comm, mh);
  p.net->close_recv(comm);
}

void exchange(const char* nics, int recv_dev, int send_dev, size_t send_offset, size_t recv_offset) {
  use_nics(nics);
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  pid_t child = spawn([&] { return sender(fds[0], send_dev, send_offset); });
  {
    Plugin p;
    ASSERT_TRUE(p.ok());
    char handle[kNcclNetHandleMaxSize];
    void* listen_comm = nullptr;
    ASSERT_EQ(p.net->listen(p.ctx, recv_dev, handle, &listen_comm), kSuccess);
    ASSERT_EQ(write(fds[1], handle, sizeof handle), ssize_t(sizeof handle));
    receive_all(p, listen_comm, recv_offset);
    p.net->close_listen(listen_comm);
  }
  EXPECT_EQ(child_exit(child, 30), 0);
  close(fds[0]);
  close(fds[1]);
}

TEST(NetPlugin, TableAndProperties) {
  use_nics("127.0.0.1,127.0.0.2,127.0.0.3");
  Plugin p;
  ASSERT_TRUE(p.ok());
  EXPECT_STREQ(p.net->name, "braid");
  for (auto* f : {(void*)p.net->devices, (void*)p.net->get_properties, (void*)p.net->listen, (void*)p.net->connect,
                  (void*)p.net->accept, (void*)p.net->reg_mr, (void*)p.net->dereg_mr, (void*)p.net->isend,
                  (void*)p.net->irecv, (void*)p.net->iflush, (void*)p.net->test, (void*)p.net->close_send,
                  (void*)p.net->close_recv, (void*)p.net->close_listen, (void*)p.net->finalize})
    EXPECT_NE(f, nullptr);
  int n = 0;
  ASSERT_EQ(p.net->devices(&n), kSuccess);
  EXPECT_EQ(n, 3);
  NcclNetPropertiesV11 props;
  ASSERT_EQ(p.net->get_properties(1, &props), kSuccess);
  EXPECT_STREQ(props.name, "127.0.0.2");
  EXPECT_EQ(props.ptr_support, kNcclPtrHost);
  EXPECT_EQ(props.max_recvs, 1);
  EXPECT_EQ(props.vprops.ndevs, 1);
  EXPECT_EQ(props.vprops.devs[0], 1);
  EXPECT_GT(props.speed, 0);
  EXPECT_EQ(props.net_device_type, kNcclNetDeviceHost);
  EXPECT_EQ(p.net->get_properties(3, &props), kInvalidArgument);
}

// With a topology file, an emulated NIC (no PCI device) reports its GPU's PCI path, so NCCL pairs
// GPU i with NIC i as the file says.
TEST(NetPlugin, TopologyFileGivesEmulatedNicsTheirGpusPciPath) {
  topo::Topology t;
  ASSERT_EQ(topo::load_topology("fuselink-2x8", &t), Result::Success);
  for (auto& n : t.nodes)
    if (n.server == 0 && n.name == "gpu1") n.pci_bus_id = "0000:3b:00.0";
  std::string path = "/tmp/braid-net-topo-" + std::to_string(getpid()) + ".json";
  {
    FILE* f = fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::string text = topo::save_topology_json(t);
    fwrite(text.data(), 1, text.size(), f);
    fclose(f);
  }
  use_nics("127.0.0.1,127.0.0.2");
  setenv("BRAID_TOPO_FILE", path.c_str(), 1);
  {
    Plugin p;
    ASSERT_TRUE(p.ok());
    NcclNetPropertiesV11 props;
    ASSERT_EQ(p.net->get_properties(1, &props), kSuccess);
    ASSERT_NE(props.pci_path, nullptr);
    EXPECT_STREQ(props.pci_path, "/sys/bus/pci/devices/0000:3b:00.0");
    ASSERT_EQ(p.net->get_properties(0, &props), kSuccess);
    EXPECT_EQ(props.pci_path, nullptr);  // gpu0 has no PCI address in the file
  }
  unsetenv("BRAID_TOPO_FILE");
  unlink(path.c_str());
}

TEST(NetPlugin, SendRecvManySizesAcrossProcessesOneNic) { exchange("127.0.0.1", 0, 0, 0, 0); }
TEST(NetPlugin, SendRecvManySizesAcrossProcessesTwoNics) { exchange("127.0.0.1,127.0.0.2", 1, 0, 0, 0); }
TEST(NetPlugin, UnalignedBuffersRegisterAndMove) { exchange("127.0.0.1,127.0.0.2", 0, 1, 3, 1021); }

// The two pipes between a test and its child: the listen handle, and "the transfer is under way".
struct Pipes {
  int handle[2] = {-1, -1}, ready[2] = {-1, -1};
  Pipes() {
    EXPECT_EQ(pipe(handle), 0);
    EXPECT_EQ(pipe(ready), 0);
  }
  ~Pipes() {
    for (int fd : {handle[0], handle[1], ready[0], ready[1]}) close(fd);
  }
};

// Kills `child` mid-transfer and checks that `req` then fails promptly instead of hanging.
void expect_error_when_killed(NcclNetV11* net, void* req, pid_t child, const char* who) {
  usleep(200000);
  kill(child, SIGKILL);
  int64_t t0 = now_ns();
  int size = 0;
  int r = wait_request(net, req, &size, 10);
  double seconds = double(now_ns() - t0) * 1e-9;
  EXPECT_NE(r, kSuccess);
  EXPECT_NE(r, -1) << "no error after 10 s: the " << who << " hangs";
  EXPECT_LT(seconds, 2.0);
  printf("the %s saw error %d %.3f s after its peer was killed\n", who, r, seconds);
  child_exit(child, 5);
}

// A child's connection to its parent's listener, whose handle comes through `fd` (null on failure).
void* connect_to_parent(Plugin& p, int fd, int dev) {
  char handle[kNcclNetHandleMaxSize];
  if (!p.ok() || read(fd, handle, sizeof handle) != ssize_t(sizeof handle)) return nullptr;
  void* comm = nullptr;
  while (!comm)
    if (p.net->connect(p.ctx, dev, handle, &comm, nullptr) != kSuccess) return nullptr;
  return comm;
}

// The parent's side: listens on `dev`, hands the handle to the child through `fd`, accepts.
void* accept_from_child(Plugin& p, int fd, int dev, void** listen_comm) {
  char handle[kNcclNetHandleMaxSize];
  void* comm = nullptr;
  EXPECT_EQ(p.net->listen(p.ctx, dev, handle, listen_comm), kSuccess);
  EXPECT_EQ(write(fd, handle, sizeof handle), ssize_t(sizeof handle));
  int64_t deadline = now_ns() + 10000000000;
  while (!comm && now_ns() < deadline)
    if (p.net->accept(*listen_comm, &comm, nullptr) != kSuccess) break;
  return comm;
}

// Pumps `count` messages of `bytes` through `comm` with `depth` in flight, each request posted
// again as soon as it completes, as NCCL's proxy does. Receivers check each message's first and
// last word. Returns the number of messages that completed correctly (-1 on an error).
int pump(NcclNetV11* net, void* comm, bool send, int count, size_t bytes, int depth) {
  std::vector<std::vector<uint64_t>> bufs(size_t(depth), std::vector<uint64_t>(bytes / 8));
  std::vector<void*> reqs(size_t(depth), nullptr);
  std::vector<int> msg(size_t(depth), -1);
  int posted = 0, good = 0, finished = 0;
  int64_t deadline = now_ns() + 30000000000;
  while (finished < count) {
    if (now_ns() > deadline) return good;
    for (size_t i = 0; i < reqs.size(); ++i) {
      if (!reqs[i] && posted < count) {
        void* data = bufs[i].data();
        if (send) {
          bufs[i].front() = bufs[i].back() = uint64_t(posted);
          if (net->isend(comm, data, bytes, 0, nullptr, nullptr, &reqs[i]) != kSuccess) return -1;
        } else {
          size_t size = bytes;
          int tag = 0;
          if (net->irecv(comm, 1, &data, &size, &tag, nullptr, nullptr, &reqs[i]) != kSuccess) return -1;
        }
        if (reqs[i]) msg[i] = posted++;
      }
      int done = 0;
      if (reqs[i]) {
        if (net->test(reqs[i], &done, nullptr) != kSuccess) return -1;
        if (done) {
          reqs[i] = nullptr;
          ++finished;
          good += send || (bufs[i].front() == uint64_t(msg[i]) && bufs[i].back() == uint64_t(msg[i]));
        }
      }
    }
  }
  return good;
}

// One side of a two-way exchange, as nccl-tests' sendrecv makes it: this process sends to the
// other and receives from it at once, one thread driving both (NCCL's proxy thread). Returns 0
// when every message went out and came in right.
int both_ways(NcclNetV11* net, void* ctx, int my_fd, int peer_fd, int count, size_t bytes) {
  char mine[kNcclNetHandleMaxSize], theirs[kNcclNetHandleMaxSize];
  void* listen_comm = nullptr;
  if (net->listen(ctx, 0, mine, &listen_comm) != kSuccess) return 10;
  if (write(my_fd, mine, sizeof mine) != ssize_t(sizeof mine)) return 11;
  if (read(peer_fd, theirs, sizeof theirs) != ssize_t(sizeof theirs)) return 12;
  void *send_comm = nullptr, *recv_comm = nullptr;
  int64_t deadline = now_ns() + 10000000000;
  while (!send_comm || !recv_comm) {
    if (!send_comm && net->connect(ctx, 0, theirs, &send_comm, nullptr) != kSuccess) return 13;
    if (!recv_comm && net->accept(listen_comm, &recv_comm, nullptr) != kSuccess) return 14;
    if (now_ns() > deadline) return 15;
  }
  constexpr int kDepth = 8;
  std::vector<std::vector<uint64_t>> out(kDepth, std::vector<uint64_t>(bytes / 8)), in(kDepth, std::vector<uint64_t>(bytes / 8));
  std::vector<void*> rs(kDepth, nullptr), rr(kDepth, nullptr);
  std::vector<int> which(kDepth, -1);
  int sent = 0, got = 0, posted_s = 0, posted_r = 0, bad = 0;
  deadline = now_ns() + 30000000000;
  while (sent < count || got < count) {
    if (now_ns() > deadline) return 16;  // stalled
    for (int i = 0; i < kDepth; ++i) {
      int done = 0;
      if (!rs[i] && posted_s < count) {
        out[i].front() = out[i].back() = uint64_t(posted_s);
        if (net->isend(send_comm, out[i].data(), bytes, 0, nullptr, nullptr, &rs[i]) != kSuccess) return 17;
        if (rs[i]) ++posted_s;
      }
      if (!rr[i] && posted_r < count) {
        void* data = in[i].data();
        size_t size = bytes;
        int tag = 0;
        if (net->irecv(recv_comm, 1, &data, &size, &tag, nullptr, nullptr, &rr[i]) != kSuccess) return 18;
        if (rr[i]) which[i] = posted_r++;
      }
      if (rs[i]) {
        if (net->test(rs[i], &done, nullptr) != kSuccess) return 19;
        if (done) rs[i] = nullptr, ++sent;
      }
      if (rr[i]) {
        if (net->test(rr[i], &done, nullptr) != kSuccess) return 20;
        if (done) {
          bad += in[i].front() != uint64_t(which[i]) || in[i].back() != uint64_t(which[i]);
          rr[i] = nullptr, ++got;
        }
      }
    }
  }
  usleep(100000);
  net->close_send(send_comm);
  net->close_recv(recv_comm);
  net->close_listen(listen_comm);
  return bad ? 21 : 0;
}

// Both processes send and receive at once (nccl-tests' sendrecv on two ranks), small and large
// messages, over two NICs. Before the request-reuse fix this stalled in 2 of 3 runs, as sendrecv
// did under NCCL on the GPU rig.
TEST(NetPlugin, BothWaysAtOnceAcrossProcesses) {
  use_nics("127.0.0.1,127.0.0.2");
  for (size_t bytes : {size_t(1024), size_t(512) << 10}) {
    Pipes a_to_b, b_to_a;
    pid_t child = spawn([&] {
      Plugin p;
      return p.ok() ? both_ways(p.net, p.ctx, b_to_a.handle[1], a_to_b.handle[0], 400, bytes) : 1;
    });
    {
      Plugin p;
      ASSERT_TRUE(p.ok());
      EXPECT_EQ(both_ways(p.net, p.ctx, a_to_b.handle[1], b_to_a.handle[0], 400, bytes), 0) << bytes << " bytes";
    }
    EXPECT_EQ(child_exit(child, 40), 0) << bytes << " bytes";
  }
}

// A long stream between processes, requests reused at once, every message over both NICs. (The
// request-reuse race is caught by BothWaysAtOnceAcrossProcesses; this one one-way stream missed it.)
TEST(NetPlugin, LongStreamAcrossProcessesLosesNothing) {
  use_nics("127.0.0.1,127.0.0.2");
  constexpr int kCount = 1000;
  Pipes pipes;
  pid_t child = spawn([&] {
    Plugin p;
    void* comm = connect_to_parent(p, pipes.handle[0], 0);
    if (!comm) return 1;
    int sent = pump(p.net, comm, true, kCount, 512 << 10, 8);
    usleep(100000);
    p.net->close_send(comm);
    return sent == kCount ? 0 : 3;
  });
  Plugin p;
  ASSERT_TRUE(p.ok());
  void* listen_comm = nullptr;
  void* comm = accept_from_child(p, pipes.handle[1], 0, &listen_comm);
  ASSERT_NE(comm, nullptr);
  EXPECT_EQ(pump(p.net, comm, false, kCount, 512 << 10, 8), kCount) << "messages lost or wrong: the stream stalled";
  EXPECT_EQ(child_exit(child, 30), 0);
  p.net->close_recv(comm);
  p.net->close_listen(listen_comm);
}

// The sender dies (SIGKILL) while a 64 MB message is on its way: the receiver's test reports an
// error, promptly, and does not hang.
TEST(NetPlugin, SenderThatDiesGivesTheReceiverAnError) {
  use_nics("127.0.0.1,127.0.0.2", "20");  // 40 MB/s in all: the message takes over a second
  Pipes pipes;
  pid_t child = spawn([&] {
    Plugin p;
    void* comm = connect_to_parent(p, pipes.handle[0], 0);
    if (!comm) return 1;
    std::vector<uint8_t> buf(64 << 20, 1);
    void* req = nullptr;
    while (!req)
      if (p.net->isend(comm, buf.data(), buf.size(), 0, nullptr, nullptr, &req) != kSuccess) return 3;
    char c = 1;
    if (write(pipes.ready[1], &c, 1) != 1) return 4;
    int size = 0;
    wait_request(p.net, req, &size, 60);
    return 5;
  });
  Plugin p;
  ASSERT_TRUE(p.ok());
  void* listen_comm = nullptr;
  void* comm = accept_from_child(p, pipes.handle[1], 0, &listen_comm);
  ASSERT_NE(comm, nullptr);
  std::vector<uint8_t> buf(64 << 20);
  void* data = buf.data();
  size_t size = buf.size();
  int tag = 0;
  void* req = nullptr;
  while (!req) ASSERT_EQ(p.net->irecv(comm, 1, &data, &size, &tag, nullptr, nullptr, &req), kSuccess);
  char c;
  ASSERT_EQ(read(pipes.ready[0], &c, 1), 1);
  expect_error_when_killed(p.net, req, child, "receiver");
  p.net->close_recv(comm);
  p.net->close_listen(listen_comm);
}

// The receiver dies while the sender still has bytes to push: the sender's test fails.
TEST(NetPlugin, ReceiverThatDiesGivesTheSenderAnError) {
  use_nics("127.0.0.1", "20");
  Pipes pipes;
  pid_t child = spawn([&] {
    Plugin p;
    char handle[kNcclNetHandleMaxSize];
    void* listen_comm = nullptr;
    if (!p.ok() || p.net->listen(p.ctx, 0, handle, &listen_comm) != kSuccess) return 1;
    if (write(pipes.handle[1], handle, sizeof handle) != ssize_t(sizeof handle)) return 2;
    void* comm = nullptr;
    while (!comm)
      if (p.net->accept(listen_comm, &comm, nullptr) != kSuccess) return 3;
    std::vector<uint8_t> buf(64 << 20);
    void* data = buf.data();
    size_t size = buf.size();
    int tag = 0;
    void* req = nullptr;
    while (!req)
      if (p.net->irecv(comm, 1, &data, &size, &tag, nullptr, nullptr, &req) != kSuccess) return 4;
    char c = 1;
    if (write(pipes.ready[1], &c, 1) != 1) return 5;
    pause();
    return 6;
  });
  Plugin p;
  ASSERT_TRUE(p.ok());
  char handle[kNcclNetHandleMaxSize];
  ASSERT_EQ(read(pipes.handle[0], handle, sizeof handle), ssize_t(sizeof handle));
  void* comm = nullptr;
  while (!comm) ASSERT_EQ(p.net->connect(p.ctx, 0, handle, &comm, nullptr), kSuccess);
  char c;
  ASSERT_EQ(read(pipes.ready[0], &c, 1), 1);
  std::vector<uint8_t> buf(64 << 20, 7);
  void* req = nullptr;
  while (!req) ASSERT_EQ(p.net->isend(comm, buf.data(), buf.size(), 0, nullptr, nullptr, &req), kSuccess);
  expect_error_when_killed(p.net, req, child, "sender");
  p.net->close_send(comm);
}

// Relays (BRAID_NET_RELAY_BYTES) through the plugin: on "host A" an owner process listens on
// NIC 1, which offers that NIC's relay pool; a sender of host A on NIC 0 sends every size to the
// test's process (host B), which checks the data. The sender's log, through NCCL's logger, must
// count relayed bytes.
int relaying_sender(int handle_fd, int owner_ready_fd) {
  setenv("NCCL_HOSTID", ("relay-a-" + std::to_string(getppid())).c_str(), 1);
  char ok = 0;
  if (read(owner_ready_fd, &ok, 1) != 1) return 20;
  int r = sender(handle_fd, 0, 0);
  if (r != 0) return r;
  const std::string log = logged();
  size_t at = log.find("bytes relayed through peer GPUs' pools");
  if (at == std::string::npos) return 21;
  size_t colon = log.rfind(": ", at);
  if (colon == std::string::npos || std::strtoull(log.c_str() + colon + 2, nullptr, 10) == 0) return 22;
  return 0;
}

int relay_owner(int ready_fd, int quit_fd) {
  setenv("NCCL_HOSTID", ("relay-a-" + std::to_string(getppid())).c_str(), 1);
  Plugin p;
  if (!p.ok()) return 30;
  char handle[kNcclNetHandleMaxSize];
  void* listen_comm = nullptr;
  if (p.net->listen(p.ctx, 1, handle, &listen_comm) != kSuccess) return 31;
  if (logged().find("NIC 1: relay pool offered") == std::string::npos) return 32;
  if (write(ready_fd, "r", 1) != 1) return 33;
  char q = 0;
  if (read(quit_fd, &q, 1) != 1) return 34;
  p.net->close_listen(listen_comm);
  return 0;
}

TEST(NetPlugin, RelaysThroughAPeersPoolWhenEnabled) {
  use_nics("127.0.0.1,127.0.0.2");
  setenv("BRAID_NET_RELAY_BYTES", "2097152", 1);
  setenv("BRAID_NET_RELAY_SLOT_BYTES", "262144", 1);
  Pipes owner, sending;
  pid_t owner_pid = spawn([&] { return relay_owner(owner.ready[1], owner.handle[0]); });
  pid_t sender_pid = spawn([&] { return relaying_sender(sending.handle[0], owner.ready[0]); });
  setenv("NCCL_HOSTID", ("relay-b-" + std::to_string(getpid())).c_str(), 1);
  {
    Plugin p;
    ASSERT_TRUE(p.ok());
    char handle[kNcclNetHandleMaxSize];
    void* listen_comm = nullptr;
    ASSERT_EQ(p.net->listen(p.ctx, 0, handle, &listen_comm), kSuccess);
    ASSERT_EQ(write(sending.handle[1], handle, sizeof handle), ssize_t(sizeof handle));
    receive_all(p, listen_comm, 0);
    p.net->close_listen(listen_comm);
  }
  EXPECT_EQ(child_exit(sender_pid, 30), 0) << "20s: set-up, 21-22: no relayed bytes logged";
  EXPECT_EQ(write(owner.handle[1], "q", 1), 1);
  EXPECT_EQ(child_exit(owner_pid, 10), 0);
  unsetenv("NCCL_HOSTID");
  unsetenv("BRAID_NET_RELAY_BYTES");
  unsetenv("BRAID_NET_RELAY_SLOT_BYTES");
}

TEST(NetPlugin, BadArgumentsAreRefusedWithAWarning) {
  use_nics("127.0.0.1");
  Plugin p;
  ASSERT_TRUE(p.ok());
  int before = g_warnings.load();
  char handle[kNcclNetHandleMaxSize];
  std::memset(handle, 0xa5, sizeof handle);
  void* comm = nullptr;
  EXPECT_EQ(p.net->connect(p.ctx, 0, handle, &comm, nullptr), kInvalidArgument);
  EXPECT_EQ(comm, nullptr);
  EXPECT_GT(g_warnings.load(), before);  // through NCCL's logger
  EXPECT_EQ(p.net->connect(p.ctx, 0, nullptr, &comm, nullptr), kInvalidArgument);
  void* listen_comm = nullptr;
  EXPECT_EQ(p.net->listen(p.ctx, 5, handle, &listen_comm), kInvalidArgument);
  ASSERT_EQ(p.net->listen(p.ctx, 0, handle, &listen_comm), kSuccess);
  int dummy;
  void* mh = nullptr;
  EXPECT_EQ(p.net->reg_mr(listen_comm, &dummy, sizeof dummy, kNcclPtrCuda, &mh), kInternalError);
  EXPECT_EQ(p.net->test(nullptr, &dummy, &dummy), kInvalidArgument);
  p.net->close_listen(listen_comm);
}

}  // namespace
}  // namespace braid::net
