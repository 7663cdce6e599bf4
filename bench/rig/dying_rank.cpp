// A rank dies in the middle of a job; do the others learn of it, and can they abort?
//
// N processes (one per rank, e.g. mpiexec -n N bench/rig/one-gpu-rank.sh .rig/dying_rank ...; rank
// from PMI_RANK, size from PMI_SIZE) share an ncclUniqueId through a file, create a communicator,
// and all-reduce one buffer on their own stream, one call at a time. The victim rank leaves with
// _exit(0) once it has seen --calls all-reduces complete. The survivors behave as PyTorch's
// watchdog: after each enqueue they poll cudaStreamQuery and ncclCommGetAsyncError every
// millisecond; on an error (from the enqueue or asynchronous) they call ncclCommAbort from another
// thread and time it. A thread of its own watches the error timeout, an enqueue that never
// returns included. No MPI: the program runs with plain NCCL and under LD_PRELOAD=libbraid.so.
//
// Output: one JSON line per surviving rank on stdout. Exit codes: 0 error seen and abort within
// --abort-bound; 1 setup failed (no GPU, no peers, bad arguments); 2 abort returned but slower than
// --abort-bound; 3 abort did not return within --abort-timeout (HANG); 4 no error within
// --error-timeout (NO ERROR). The victim prints one line to stderr and exits 0.
//
// With --victim none no rank leaves: every rank runs --calls all-reduces and reports COMPLETED
// (exit 0), or meets an error and aborts as above. With BRAID_FAULT (src/engine/faults.h) failing
// one rank inside braid, this checks that every rank returns: all fall back together (all
// COMPLETED) or all see the error (all OK), within the bound that BRAID_TIMEOUT sets.
//
// --collective alltoall runs ncclAlltoAll (out of place, --bytes sent per rank) instead: with
// BRAID_ROUTE_EXCHANGES, a peer dying under braid's routed exchange (docs/ROUTING.md).
#include <cuda_runtime.h>
#include <nccl.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>

#include "rank_rendezvous.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::string id_file;
  size_t bytes = 256ull << 20;
  int victim = -1;  // default: nranks - 1; kNoVictim: nobody leaves
  int calls = 20;
  double abort_timeout = 10.0;
  double error_timeout = 30.0;
  double abort_bound = 2.0;
  double id_timeout = 60.0;
  double init_timeout = 120.0;
  int device = 0;
  bool alltoall = false;  // --collective alltoall
};

int g_rank = -1, g_nranks = -1;
constexpr int kNoVictim = -2;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

double wall_now() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

std::string json_str(const char* s) {
  std::string out = "\"";
  for (const char* p = s ? s : ""; *p; ++p) {
    const unsigned char c = static_cast<unsigned char>(*p);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

// A setup failure: one JSON line (so that the summary sees it) and exit 1.
[[noreturn]] void setup_error(const std::string& what) {
  std::printf("{\"rank\": %d, \"nranks\": %d, \"result\": \"SETUP_ERROR\", \"error\": %s}\n", g_rank,
              g_nranks, json_str(what.c_str()).c_str());
  std::fflush(stdout);
  std::fprintf(stderr, "dying_rank rank %d: %s\n", g_rank, what.c_str());
  _exit(1);
}

void usage() {
  std::fprintf(stderr,
               "usage: dying_rank --id-file PATH [--bytes 256M] [--victim R|none] [--calls 20]\n"
               "                  [--abort-timeout 10] [--error-timeout 30] [--abort-bound 2.0]\n"
               "                  [--id-timeout 60] [--init-timeout 120] [--device 0]\n"
               "                  [--collective allreduce|alltoall]\n"
               "rank from PMI_RANK (or OMPI_COMM_WORLD_RANK, RANK), size from PMI_SIZE (or\n"
               "OMPI_COMM_WORLD_SIZE, WORLD_SIZE). The id file must not exist before the start.\n");
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) {
        usage();
        setup_error("missing value for " + a);
      }
      return argv[++i];
    };
    if (a == "--id-file") o.id_file = next();
    else if (a == "--bytes") o.bytes = rig::parse_size(next());
    else if (a == "--victim") {
      const std::string v = next();
      o.victim = v == "none" ? kNoVictim : std::atoi(v.c_str());
    }
    else if (a == "--calls") o.calls = std::atoi(next());
    else if (a == "--collective") {
      const std::string c = next();
      if (c != "allreduce" && c != "alltoall") setup_error("--collective allreduce or alltoall, not " + c);
      o.alltoall = c == "alltoall";
    }
    else if (a == "--abort-timeout") o.abort_timeout = std::atof(next());
    else if (a == "--error-timeout") o.error_timeout = std::atof(next());
    else if (a == "--abort-bound") o.abort_bound = std::atof(next());
    else if (a == "--id-timeout") o.id_timeout = std::atof(next());
    else if (a == "--init-timeout") o.init_timeout = std::atof(next());
    else if (a == "--device") o.device = std::atoi(next());
    else if (a == "-h" || a == "--help") {
      usage();
      std::exit(0);
    } else {
      usage();
      setup_error("unknown argument " + a);
    }
  }
  if (o.id_file.empty()) {
    usage();
    setup_error("--id-file is required");
  }
  return o;
}

// A thread that ends the process if `done` is not set in time (init that waits for absent peers).
void deadline(std::atomic<bool>& done, double seconds, const char* what) {
  std::thread([&done, seconds, what] {
    const auto start = Clock::now();
    while (!done.load()) {
      if (seconds_since(start) > seconds) setup_error(std::string(what) + " did not return in time");
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }).detach();
}

#define CUDA_OR_DIE(cmd)                                                                     \
  do {                                                                                       \
    const cudaError_t e_ = (cmd);                                                            \
    if (e_ != cudaSuccess) setup_error(std::string(#cmd) + ": " + cudaGetErrorString(e_));  \
  } while (0)
#define NCCL_OR_DIE(cmd)                                                                     \
  do {                                                                                       \
    const ncclResult_t r_ = (cmd);                                                           \
    if (r_ != ncclSuccess) setup_error(std::string(#cmd) + ": " + ncclGetErrorString(r_));  \
  } while (0)

}  // namespace

int main(int argc, char** argv) {
  g_rank = rig::env_int(rig::kRankVariables, -1);
  g_nranks = rig::env_int(rig::kSizeVariables, -1);
  const Options opt = parse(argc, argv);
  if (g_rank < 0 || g_nranks < 2 || g_rank >= g_nranks)
    setup_error("needs PMI_RANK and PMI_SIZE (2 ranks or more); got rank " + std::to_string(g_rank) +
                " of " + std::to_string(g_nranks));
  const int victim = opt.victim == kNoVictim ? kNoVictim : opt.victim >= 0 ? opt.victim : g_nranks - 1;
  if (victim >= g_nranks) setup_error("--victim " + std::to_string(victim) + " is not a rank");
  const size_t count = opt.bytes / sizeof(float);
  if (count == 0) setup_error("--bytes too small");

  // The GPU first: without one, fail here rather than leave the peers waiting for the id.
  CUDA_OR_DIE(cudaSetDevice(opt.device));
  void* buf = nullptr;
  CUDA_OR_DIE(cudaMalloc(&buf, count * sizeof(float)));
  CUDA_OR_DIE(cudaMemset(buf, 0, count * sizeof(float)));
  void* out = buf;  // all-reduce in place; all-to-all into a buffer of its own
  if (opt.alltoall) {
    if (count % g_nranks != 0) setup_error("--bytes must split into equal blocks per rank for alltoall");
    CUDA_OR_DIE(cudaMalloc(&out, count * sizeof(float)));
  }
  cudaStream_t stream;
  CUDA_OR_DIE(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  CUDA_OR_DIE(cudaDeviceSynchronize());

  ncclUniqueId id;
  if (g_rank == 0) {
    NCCL_OR_DIE(ncclGetUniqueId(&id));
    if (const std::string error = rig::write_id(opt.id_file, id); !error.empty()) setup_error(error);
  } else if (!rig::read_id(opt.id_file, opt.id_timeout, &id)) {
    setup_error("no id file " + opt.id_file + " after " + std::to_string(opt.id_timeout) + " s");
  }
  ncclComm_t comm = nullptr;
  {
    static std::atomic<bool> init_done{false};  // static: the deadline thread outlives this block
    deadline(init_done, opt.init_timeout, "ncclCommInitRank");
    const auto t0 = Clock::now();
    NCCL_OR_DIE(ncclCommInitRank(&comm, g_nranks, id, g_rank));
    init_done = true;
    std::fprintf(stderr, "dying_rank rank %d/%d: communicator in %.2f s, %zu bytes per call\n", g_rank,
                 g_nranks, seconds_since(t0), count * sizeof(float));
  }

  const std::string death_file = opt.id_file + ".victim";
  int calls_done = 0;
  auto last_completion = Clock::now();  // the victim dies right after a completion
  // The error timeout runs on a thread of its own, as PyTorch's watchdog does, so that an enqueue
  // that never returns (a drop-in waiting for a dead peer inside ncclAllReduce) is reported too.
  static std::atomic<int64_t> last_ns{Clock::now().time_since_epoch().count()};
  static std::atomic<int> calls_seen{0};
  static std::atomic<bool> in_enqueue{false}, error_seen{false}, reported{false};
  std::thread([timeout = opt.error_timeout] {
    while (!error_seen.load()) {
      const double waited =
          std::chrono::duration<double>(Clock::now().time_since_epoch() - Clock::duration(last_ns.load())).count();
      if (waited > timeout && !reported.exchange(true)) {
        std::printf(
            "{\"rank\": %d, \"nranks\": %d, \"result\": \"NO ERROR\", \"calls_done\": %d, "
            "\"seconds_waited\": %.3f, \"waiting_in\": \"%s\"}\n",
            g_rank, g_nranks, calls_seen.load(), waited, in_enqueue.load() ? "the enqueue" : "the stream");
        std::fflush(stdout);
        _exit(4);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }).detach();
  ncclResult_t error = ncclSuccess;
  std::string cuda_error;
  bool from_enqueue = false;
  while (error == ncclSuccess) {
    if (victim == kNoVictim && calls_done >= opt.calls) {
      error_seen = true;  // stops the watchdog
      // Leave together: a rank that exits while a peer still waits for its last call would be a
      // dying rank to that peer.
      const std::string done = opt.id_file + ".done.";
      if (FILE* f = std::fopen((done + std::to_string(g_rank)).c_str(), "w")) std::fclose(f);
      const auto wait_start = Clock::now();
      for (int r = 0; r < g_nranks; ++r)
        while (access((done + std::to_string(r)).c_str(), F_OK) != 0 && seconds_since(wait_start) < opt.error_timeout)
          std::this_thread::sleep_for(std::chrono::milliseconds(5));
      std::printf("{\"rank\": %d, \"nranks\": %d, \"result\": \"COMPLETED\", \"victim\": null, \"calls_done\": %d}\n",
                  g_rank, g_nranks, calls_done);
      std::fflush(stdout);
      _exit(0);
    }
    if (g_rank == victim && calls_done >= opt.calls) {
      const double t = wall_now();
      if (FILE* f = std::fopen(death_file.c_str(), "w")) {
        std::fprintf(f, "%.6f\n", t);
        std::fclose(f);
      }
      std::fprintf(stderr, "dying_rank rank %d: victim, leaving with _exit(0) after %d calls\n", g_rank,
                   calls_done);
      std::fflush(stderr);
      _exit(0);
    }
    in_enqueue = true;
    const ncclResult_t enq = opt.alltoall ? ncclAlltoAll(buf, out, count / g_nranks, ncclFloat, comm, stream)
                                          : ncclAllReduce(buf, out, count, ncclFloat, ncclSum, comm, stream);
    in_enqueue = false;
    if (enq != ncclSuccess && enq != ncclInProgress) {
      error = enq;
      from_enqueue = true;
      break;
    }
    // The watchdog: poll the stream and the communicator's asynchronous error every millisecond.
    while (true) {
      const cudaError_t q = cudaStreamQuery(stream);
      if (q == cudaSuccess) {
        ++calls_done;
        last_completion = Clock::now();
        calls_seen = calls_done;
        last_ns = last_completion.time_since_epoch().count();
        break;
      }
      if (q != cudaErrorNotReady) {
        cuda_error = cudaGetErrorString(q);
        error = ncclUnhandledCudaError;
        break;
      }
      ncclResult_t async = ncclSuccess;
      const ncclResult_t r = ncclCommGetAsyncError(comm, &async);
      if (r != ncclSuccess) async = r;
      if (async != ncclSuccess && async != ncclInProgress) {
        error = async;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }

  // An error: note when, and what NCCL (or braid) says, before the abort clears it.
  error_seen = true;
  if (reported.exchange(true)) pause();  // the watchdog has just reported NO ERROR and exits
  const double since_completion = seconds_since(last_completion);
  double since_death = -1.0;
  if (FILE* f = std::fopen(death_file.c_str(), "r")) {
    double t = 0;
    if (std::fscanf(f, "%lf", &t) == 1) since_death = wall_now() - t;
    std::fclose(f);
  }
  const char* last = ncclGetLastError(comm);
  const std::string last_error = last ? last : "";

  std::mutex m;
  std::condition_variable cv;
  bool aborted = false;
  ncclResult_t abort_result = ncclSuccess;
  const auto abort_start = Clock::now();
  double abort_seconds = -1.0;
  std::thread([&] {
    const ncclResult_t r = ncclCommAbort(comm);
    const double s = seconds_since(abort_start);
    std::lock_guard<std::mutex> lock(m);
    abort_result = r;
    abort_seconds = s;
    aborted = true;
    cv.notify_all();
  }).detach();
  bool returned;
  {
    std::unique_lock<std::mutex> lock(m);
    returned = cv.wait_for(lock, std::chrono::duration<double>(opt.abort_timeout), [&] { return aborted; });
  }
  const char* verdict = !returned ? "HANG" : abort_seconds <= opt.abort_bound ? "OK" : "SLOW ABORT";
  std::string line;
  char buf2[512];
  std::snprintf(buf2, sizeof buf2,
                "{\"rank\": %d, \"nranks\": %d, \"result\": \"%s\", \"victim\": %d, \"calls_done\": %d, "
                "\"error_code\": %d, \"error_from\": \"%s\", ",
                g_rank, g_nranks, verdict, victim, calls_done, static_cast<int>(error),
                from_enqueue ? "enqueue" : cuda_error.empty() ? "async" : "stream");
  line += buf2;
  line += "\"error_string\": " + json_str(ncclGetErrorString(error)) + ", ";
  line += "\"last_error\": " + json_str(last_error.c_str()) + ", ";
  if (!cuda_error.empty()) line += "\"cuda_error\": " + json_str(cuda_error.c_str()) + ", ";
  std::snprintf(buf2, sizeof buf2,
                "\"seconds_to_error\": %.4f, \"seconds_since_last_completion\": %.4f, "
                "\"seconds_since_victim_exit\": ",
                since_death >= 0 ? since_death : since_completion, since_completion);
  line += buf2;
  if (since_death >= 0) {
    std::snprintf(buf2, sizeof buf2, "%.4f, ", since_death);
    line += buf2;
  } else {
    line += "null, ";
  }
  if (returned)
    std::snprintf(buf2, sizeof buf2, "\"abort_seconds\": %.4f, \"abort_result\": %d, \"abort_bound\": %.3f}",
                  abort_seconds, static_cast<int>(abort_result), opt.abort_bound);
  else
    std::snprintf(buf2, sizeof buf2, "\"abort_seconds\": null, \"abort_waited\": %.3f, \"abort_bound\": %.3f}",
                  opt.abort_timeout, opt.abort_bound);
  line += buf2;
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
  // No cleanup: after an abort (or during a hung one) the CUDA and NCCL teardown may block.
  _exit(!returned ? 3 : abort_seconds <= opt.abort_bound ? 0 : 2);
}
