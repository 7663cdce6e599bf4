// Runs a list of cases on every rank through the C API, ranks as threads of this process or as
// forked processes (one per GPU), and gathers each rank's first error and output hashes.
#pragma once

#include <cuda_runtime.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <functional>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "api_case.h"
#include "support/forked_ranks.h"
#include "support/visible_gpus.h"

namespace braid::apitest {

struct RankOutcome {
  std::string error;             // empty: every case passed
  std::vector<uint64_t> hashes;  // per case
};

using test::visible_gpus;

inline size_t largest_count(const std::vector<Case>& cases) {
  size_t m = 0;
  for (const auto& k : cases) m = std::max(m, k.count);
  return m;
}

// One rank's whole run: communicator on GPU `rank`, every case in order. On the first failure the
// communicator is aborted, so the other ranks fail fast instead of waiting out the timeout.
inline RankOutcome run_rank(const braidUniqueId& id, int rank, int ranks, const std::vector<Case>& cases) {
  RankOutcome out;
  out.hashes.assign(cases.size(), 0);
  if (cudaSetDevice(rank) != cudaSuccess) {
    out.error = "cudaSetDevice(" + std::to_string(rank) + ") failed";
    return out;
  }
  braidComm_t comm = nullptr;
  const ncclResult_t init = braidCommInitRank(&comm, ranks, id, rank);
  if (init != ncclSuccess) {
    out.error = std::string("braidCommInitRank: ") + braidGetErrorString(init) + ": " + braidGetLastError(nullptr);
    return out;
  }
  RankRunner runner(comm, rank, ranks, largest_count(cases), braid_collectives());
  if (!runner.ok()) out.error = "rank setup (stream, buffers) failed";
  for (size_t i = 0; i < cases.size() && out.error.empty(); ++i) out.error = runner.run(cases[i], &out.hashes[i]);
  if (!out.error.empty()) {
    braidCommAbort(comm);
  } else if (braidCommDestroy(comm) != ncclSuccess) {
    out.error = std::string("braidCommDestroy: ") + braidGetLastError(comm);
  }
  return out;
}

inline std::vector<RankOutcome> run_as_threads(int ranks, const std::vector<Case>& cases) {
  braidUniqueId id;
  braidGetUniqueId(&id);
  std::vector<RankOutcome> outcomes(ranks);
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] { outcomes[r] = run_rank(id, r, ranks, cases); });
  for (auto& t : threads) t.join();
  return outcomes;
}

// The GPU count, asked in a child process: a parent that forks ranks must not touch CUDA first.
inline int gpu_count_without_cuda_in_this_process() {
  const pid_t pid = fork();
  if (pid == 0) {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) n = 0;
    _exit(std::min(n, 100));
  }
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return 0;
  return WEXITSTATUS(status);
}

// One process per rank; results come back through shared memory mapped before the fork.
inline std::vector<RankOutcome> run_as_processes(int ranks, const std::vector<Case>& cases, double limit_seconds) {
  constexpr size_t kErrorBytes = 1024;
  const size_t per_rank = kErrorBytes + cases.size() * sizeof(uint64_t);
  void* shared = mmap(nullptr, per_rank * ranks, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  std::vector<RankOutcome> outcomes(ranks);
  if (shared == MAP_FAILED) {
    outcomes[0].error = "mmap failed";
    return outcomes;
  }
  std::memset(shared, 0, per_rank * ranks);
  braidUniqueId id;
  braidGetUniqueId(&id);
  std::vector<std::function<int()>> roles;
  for (int r = 0; r < ranks; ++r)
    roles.push_back([&, r] {
      const RankOutcome o = run_rank(id, r, ranks, cases);
      unsigned char* mine = static_cast<unsigned char*>(shared) + per_rank * r;
      std::snprintf(reinterpret_cast<char*>(mine), kErrorBytes, "%s", o.error.empty() ? "ok" : o.error.c_str());
      std::memcpy(mine + kErrorBytes, o.hashes.data(), cases.size() * sizeof(uint64_t));
      return o.error.empty() ? 0 : 1;
    });
  const std::vector<test::RankExit> exits =
      test::run_forked(roles, std::chrono::seconds(static_cast<long>(std::ceil(limit_seconds))));
  for (int r = 0; r < ranks; ++r) {
    const unsigned char* mine = static_cast<const unsigned char*>(shared) + per_rank * r;
    outcomes[r].hashes.resize(cases.size());
    std::memcpy(outcomes[r].hashes.data(), mine + kErrorBytes, cases.size() * sizeof(uint64_t));
    const std::string text(reinterpret_cast<const char*>(mine));
    if (!exits[r].forked || exits[r].killed) outcomes[r].error = exits[r].what();
    else if (text != "ok") outcomes[r].error = text.empty() ? "rank process died (" + exits[r].what() + ")" : text;
  }
  munmap(shared, per_rank * ranks);
  return outcomes;
}

}  // namespace braid::apitest
