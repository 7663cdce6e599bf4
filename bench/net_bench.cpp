// Raw throughput of braid's TCP transport (src/net) against a plain socket loop (one blocking
// socket, one thread: what NCCL's socket transport does by default), between two processes.
//   net_bench local [options]             both ends here (fork), plain then braid, over the NICs
//   net_bench recv|send --handle-file F   one end each, e.g. in two network namespaces
// Options: --transport plain|braid, --nics 127.0.0.1,127.0.0.2 (the receiver's, in recv; the
// sender's, in send), --bytes, --message, --depth, --streams, --threads, --rate-mbps (braid's own
// shaping).
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "common/sizes.h"
#include "net/clock.h"
#include "net/sockets.h"
#include "net/tcp_transport.h"

using namespace braid;
using namespace braid::net;

namespace {

struct Options {
  std::string transport = "braid";
  std::string nics = "127.0.0.1";
  std::string handle_file;
  std::string bytes = "1G", message = "512K";  // NCCL's message: a 4 MB buffer in 8 steps
  int depth = 8, streams = 2, threads = 1;
  double rate_mbps = 0;
};

void write_handle(const std::string& path, const void* data, size_t n) {
  std::string tmp = path + ".tmp";
  std::ofstream(tmp, std::ios::binary).write(static_cast<const char*>(data), std::streamsize(n));
  std::rename(tmp.c_str(), path.c_str());
}

bool read_handle(const std::string& path, void* data, size_t n) {
  for (int i = 0; i < 30000; ++i) {
    std::ifstream f(path, std::ios::binary);
    if (f && f.read(static_cast<char*>(data), std::streamsize(n))) return true;
    usleep(1000);
  }
  return false;
}

size_t parse_bytes(const std::string& s) {
  std::optional<size_t> v = parse_byte_size(s);
  if (!v) {
    fprintf(stderr, "not a size: %s\n", s.c_str());
    exit(2);
  }
  return *v;
}

std::vector<double> g_recv_mb_s;  // local mode: each receive's rate, for the medians

void report(const Options& o, const char* role, size_t bytes, int64_t ns) {
  if (std::string(role) == "recv") g_recv_mb_s.push_back(double(bytes) / (double(ns) * 1e-9) / 1e6);
  printf("%-6s %-5s nics=%-24s streams=%d rate=%g MB/s: %zu bytes in %.3f s = %.1f MB/s\n", o.transport.c_str(), role,
         o.nics.c_str(), o.transport == "plain" ? 1 : o.streams, o.rate_mbps, bytes, double(ns) * 1e-9,
         double(bytes) / (double(ns) * 1e-9) / 1e6);
  fflush(stdout);
}

int plain_recv(const Options& o) {
  std::vector<Nic> nics;
  if (find_nics(o.nics, &nics) != Result::Success) return 1;
  int lfd = -1;
  WireAddress where{};
  if (listen_on(nics[0], &lfd, &where) != Result::Success) return 1;
  write_handle(o.handle_file, &where, sizeof where);
  int fd = -1;
  while ((fd = accept(lfd, nullptr, nullptr)) < 0) usleep(100);
  size_t total = parse_bytes(o.bytes), got = 0, message = parse_bytes(o.message);
  // The same `depth` buffers in turn as braid's side uses: the same cache footprint.
  std::vector<char> buf(message * size_t(o.depth));
  int64_t t0 = 0;
  while (got < total) {
    size_t at = got % buf.size();
    ssize_t r = recv(fd, buf.data() + at, std::min(buf.size() - at, total - got), 0);
    if (r <= 0) return 1;
    if (!t0) t0 = now_ns();
    got += size_t(r);
  }
  report(o, "recv", total, now_ns() - t0);
  close(fd);
  close(lfd);
  return 0;
}

int plain_send(const Options& o) {
  std::vector<Nic> nics;
  WireAddress to{};
  if (find_nics(o.nics, &nics) != Result::Success || !read_handle(o.handle_file, &to, sizeof to)) return 1;
  int fd = -1;
  if (start_connect(nics[0], to, &fd) != Result::Success || finish_connect(fd, 30000) != Result::Success) return 1;
  int flags = 0;  // blocking from here on, as a plain loop is
  fcntl(fd, F_SETFL, flags);
  size_t total = parse_bytes(o.bytes), put = 0, message = parse_bytes(o.message);
  std::vector<char> buf(message * size_t(o.depth), 1);
  int64_t t0 = now_ns();
  while (put < total) {
    size_t at = put % buf.size();
    ssize_t r = send(fd, buf.data() + at, std::min({message - at % message, buf.size() - at, total - put}), MSG_NOSIGNAL);
    if (r <= 0) return 1;
    put += size_t(r);
  }
  report(o, "send", total, now_ns() - t0);
  close(fd);
  return 0;
}

std::unique_ptr<TcpTransport> braid_transport(const Options& o) {
  TcpOptions t;
  if (find_nics(o.nics, &t.nics) != Result::Success) return nullptr;
  t.streams_per_nic = o.streams;
  t.threads_per_nic = o.threads;
  t.rate_bytes_per_s = o.rate_mbps * 1e6;
  std::unique_ptr<TcpTransport> out;
  make_tcp_transport(std::move(t), &out);
  return out;
}

// Keeps `depth` messages in flight on `comm` until `total` bytes have moved; returns the time.
int64_t pump(TcpTransport& t, Comm* comm, bool send, const Options& o) {
  size_t total = parse_bytes(o.bytes), message = parse_bytes(o.message);
  size_t count = (total + message - 1) / message, posted = 0, done = 0;
  std::vector<std::vector<char>> bufs(size_t(o.depth), std::vector<char>(message, 1));
  std::vector<Request*> reqs(size_t(o.depth), nullptr);
  int64_t t0 = now_ns();
  while (done < count) {
    size_t before = done;
    for (size_t i = 0; i < reqs.size(); ++i) {
      if (!reqs[i] && posted < count) {
        Result r = send ? t.isend(comm, bufs[i].data(), message, &reqs[i]) : t.irecv(comm, bufs[i].data(), message, &reqs[i]);
        if (r != Result::Success) return -1;
        if (reqs[i]) ++posted;
      }
      bool finished = false;
      if (reqs[i]) {
        if (t.test(reqs[i], &finished, nullptr) != Result::Success) return -1;
        if (finished) {
          reqs[i] = nullptr;
          ++done;
        }
      }
    }
    if (done == before) sched_yield();  // as NCCL's proxy thread does when nothing progressed
  }
  return now_ns() - t0;
}

int braid_recv(const Options& o) {
  auto t = braid_transport(o);
  if (!t) return 1;
  char handle[kNcclNetHandleMaxSize];
  ListenComm* l = nullptr;
  if (t->listen(0, handle, &l) != Result::Success) return 1;
  write_handle(o.handle_file, handle, sizeof handle);
  Comm* c = nullptr;
  while (!c)
    if (t->accept(l, &c) != Result::Success) return 1;
  int64_t ns = pump(*t, c, false, o);
  if (ns < 0) return 1;
  report(o, "recv", parse_bytes(o.bytes) / parse_bytes(o.message) * parse_bytes(o.message), ns);
  t->close(c);
  t->close_listen(l);
  return 0;
}

int braid_send(const Options& o) {
  auto t = braid_transport(o);
  char handle[kNcclNetHandleMaxSize];
  if (!t || !read_handle(o.handle_file, handle, sizeof handle)) return 1;
  Comm* c = nullptr;
  while (!c)
    if (t->connect(0, handle, &c) != Result::Success) return 1;
  int64_t ns = pump(*t, c, true, o);
  if (ns < 0) return 1;
  report(o, "send", parse_bytes(o.bytes) / parse_bytes(o.message) * parse_bytes(o.message), ns);
  usleep(100000);  // let the receiver drain before the sockets close
  t->close(c);
  return 0;
}

int run_role(const Options& o, bool send) {
  if (o.transport == "plain") return send ? plain_send(o) : plain_recv(o);
  return send ? braid_send(o) : braid_recv(o);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// Plain and braid alternate `repeat` times (this machine's load drifts); medians of the receive
// rates at the end.
int run_local(Options o, int repeat) {
  int status = 0;
  std::vector<double> rates[2];
  for (int round = 0; round < 2 * repeat; ++round) {
    const char* transport = round % 2 ? "braid" : "plain";
    o.transport = transport;
    o.handle_file = "/tmp/net_bench_handle_" + std::to_string(getpid());
    unlink(o.handle_file.c_str());
    pid_t child = fork();
    if (child == 0) _exit(run_role(o, true));
    int rc = run_role(o, false);
    int st = 0;
    waitpid(child, &st, 0);
    unlink(o.handle_file.c_str());
    status |= rc | WEXITSTATUS(st);
    if (!g_recv_mb_s.empty()) rates[round % 2].push_back(g_recv_mb_s.back());
  }
  double plain = median(rates[0]), braid = median(rates[1]);
  printf("median of %d: plain %.1f MB/s, braid %.1f MB/s, braid/plain %.2f (nics %s, message %s)\n", repeat, plain,
         braid, braid / plain, o.nics.c_str(), o.message.c_str());
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"braid net transport throughput against a plain socket loop"};
  Options o;
  std::string mode = "local";
  int repeat = 3;
  app.add_option("mode", mode, "local, recv or send")->check(CLI::IsMember({"local", "recv", "send"}));
  app.add_option("--transport", o.transport, "plain or braid")->check(CLI::IsMember({"plain", "braid"}));
  app.add_option("--nics", o.nics, "comma list of local addresses or interfaces");
  app.add_option("--handle-file", o.handle_file, "where recv writes its handle and send reads it");
  app.add_option("--bytes", o.bytes, "bytes to move");
  app.add_option("--message", o.message, "bytes per message (per send() for plain)");
  app.add_option("--depth", o.depth, "braid: messages in flight");
  app.add_option("--streams", o.streams, "braid: TCP connections per NIC");
  app.add_option("--threads", o.threads, "braid: progress threads per NIC");
  app.add_option("--rate-mbps", o.rate_mbps, "braid: per-NIC rate limit in MB/s (0: none)");
  app.add_option("--repeat", repeat, "local: rounds of plain then braid");
  CLI11_PARSE(app, argc, argv);
  if (mode == "local") return run_local(o, repeat);
  if (o.handle_file.empty()) {
    fprintf(stderr, "--handle-file is needed for %s\n", mode.c_str());
    return 2;
  }
  return run_role(o, mode == "send");
}
