// Stand-ins for the CUDA runtime and NCCL calls that dying_rank.cpp makes, so that its control
// flow (id file, victim, watchdog polling, abort thread, verdicts and exit codes) can be checked on
// a machine without a GPU:
//   g++ -std=c++20 -O1 -o /tmp/dying_rank_stub bench/rig/dying_rank.cpp bench/rig/dying_rank_stub.cpp
//       -I/usr/local/include -I/usr/local/cuda/include -lpthread
//   STUB_DIR=$(mktemp -d) mpiexec -n 3 /tmp/dying_rank_stub --id-file $STUB_DIR/id --calls 5
// An all-reduce "runs" 5 ms once every rank is alive; a rank whose peer has exited (or is a
// zombie) sees ncclRemoteError. STUB_MODE: ok (default), silent (never an error), slow (abort takes
// 3 s), hang (abort never returns), enqueue (calls complete alone; the next ncclAllReduce fails),
// stuck (calls complete alone; the next ncclAllReduce never returns).
#include <cuda_runtime.h>
#include <nccl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace {
using Clock = std::chrono::steady_clock;
std::string g_mode, g_dir;
int g_rank = 0, g_nranks = 0;
std::vector<int> g_pids;
Clock::time_point g_started;
bool g_running = false;

std::string mode() { return std::getenv("STUB_MODE") ? std::getenv("STUB_MODE") : "ok"; }

bool alive(int pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(f, line)) return false;
  const size_t close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() && line[close + 2] != 'Z';
}

bool peer_dead() {
  for (int r = 0; r < g_nranks; ++r)
    if (r != g_rank && !alive(g_pids[r])) return true;
  return false;
}
}  // namespace

extern "C" {
cudaError_t cudaSetDevice(int) { return cudaSuccess; }
cudaError_t cudaMalloc(void** p, size_t n) {
  *p = std::malloc(n < 64 ? 64 : 64);  // the stub never touches the buffer
  return cudaSuccess;
}
cudaError_t cudaMemset(void*, int, size_t) { return cudaSuccess; }
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned) {
  *s = reinterpret_cast<cudaStream_t>(0x1);
  return cudaSuccess;
}
cudaError_t cudaDeviceSynchronize() { return cudaSuccess; }
const char* cudaGetErrorString(cudaError_t) { return "stub cuda error"; }
cudaError_t cudaStreamQuery(cudaStream_t) {
  if (!g_running) return cudaSuccess;
  if (g_mode != "enqueue" && g_mode != "stuck" && peer_dead()) return cudaErrorNotReady;  // the kernel waits forever
  if (Clock::now() - g_started < std::chrono::milliseconds(5)) return cudaErrorNotReady;
  g_running = false;
  return cudaSuccess;
}

const char* ncclGetErrorString(ncclResult_t r) {
  return r == ncclRemoteError ? "remote process exited or there was a network error" : "stub nccl result";
}
ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  std::memset(id, 7, sizeof *id);
  return ncclSuccess;
}
ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId, int rank) {
  g_mode = mode();
  g_dir = std::getenv("STUB_DIR") ? std::getenv("STUB_DIR") : "/tmp";
  g_rank = rank;
  g_nranks = nranks;
  {
    std::ofstream(g_dir + "/pid." + std::to_string(rank) + ".tmp") << getpid() << "\n";
    std::rename((g_dir + "/pid." + std::to_string(rank) + ".tmp").c_str(),
                (g_dir + "/pid." + std::to_string(rank)).c_str());
  }
  g_pids.assign(nranks, 0);
  for (int r = 0; r < nranks; ++r) {
    while (true) {
      std::ifstream f(g_dir + "/pid." + std::to_string(r));
      if (f >> g_pids[r]) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  *comm = reinterpret_cast<ncclComm_t>(0x2);
  return ncclSuccess;
}
ncclResult_t ncclAllReduce(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t) {
  if (g_mode == "enqueue" && peer_dead()) return ncclRemoteError;
  while (g_mode == "stuck" && peer_dead()) std::this_thread::sleep_for(std::chrono::seconds(1));
  g_running = true;
  g_started = Clock::now();
  return ncclSuccess;
}
// The same stand-in: the program treats both collectives alike.
ncclResult_t ncclAlltoAll(const void* send, void* recv, size_t count, ncclDataType_t type, ncclComm_t comm,
                          cudaStream_t stream) {
  return ncclAllReduce(send, recv, count, type, ncclSum, comm, stream);
}
ncclResult_t ncclCommGetAsyncError(ncclComm_t, ncclResult_t* e) {
  *e = (g_mode == "ok" || g_mode == "slow" || g_mode == "hang") && peer_dead() ? ncclRemoteError : ncclSuccess;
  return ncclSuccess;
}
const char* ncclGetLastError(ncclComm_t) { return peer_dead() ? "stub: peer \"gone\"\n" : ""; }
ncclResult_t ncclCommAbort(ncclComm_t) {
  if (g_mode == "hang") while (true) std::this_thread::sleep_for(std::chrono::seconds(1));
  if (g_mode == "slow") std::this_thread::sleep_for(std::chrono::seconds(3));
  return ncclSuccess;
}
}
