// Host time per ncclAllReduce call, call by call: how long the calling thread is inside each call
// (steady clock around it), the median and mean over -n calls per size, out of place and in place.
// nccl-tests' -C 1 reports the mean of a loop of calls, which one slow call in 30 moves by
// microseconds; issue 18's bound is on the median. Runs through whatever ncclAllReduce the process
// gets: plain NCCL, or braid's with LD_PRELOAD. One process per rank, launched by mpiexec (PMI_RANK,
// PMI_SIZE) or torchrun (RANK, WORLD_SIZE); rank 0 hands NCCL's id over a file (--id-file).
//   host_time_probe --id-file PATH [-b 4K] [-e 256M] [-f 4] [-n 100] [-w 5]
#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <string>
#include <vector>

#include "probe_check.h"
#include "rig/rank_rendezvous.h"

namespace {

// Rank 0 writes the id to the file; the others wait for it.
ncclUniqueId share_id(int rank, const std::string& path) {
  ncclUniqueId id{};
  if (rank == 0) {
    NK(ncclGetUniqueId(&id));
    if (const std::string error = rig::write_id(path, id); !error.empty())
      std::fprintf(stderr, "host_time_probe: %s\n", error.c_str()), std::exit(1);
  } else if (!rig::read_id(path, 60.0, &id)) {
    std::fprintf(stderr, "host_time_probe: no id in %s\n", path.c_str()), std::exit(1);
  }
  return id;
}

}  // namespace

int main(int argc, char** argv) {
  size_t begin = 4096, end = size_t{256} << 20;
  int factor = 4, calls = 100, warmup = 5;
  std::string id_file;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "-b") begin = rig::parse_size(argv[i + 1]);
    else if (flag == "-e") end = rig::parse_size(argv[i + 1]);
    else if (flag == "-f") factor = std::max(2, std::atoi(argv[i + 1]));
    else if (flag == "-n") calls = std::max(1, std::atoi(argv[i + 1]));
    else if (flag == "-w") warmup = std::max(0, std::atoi(argv[i + 1]));
    else if (flag == "--id-file") id_file = argv[i + 1];
    else std::fprintf(stderr, "host_time_probe: unknown flag %s\n", flag.c_str()), std::exit(2);
  }
  if (id_file.empty()) std::fprintf(stderr, "host_time_probe: --id-file is required\n"), std::exit(2);
  static const char* const kDeviceVariables[] = {"NCCL_TESTS_DEVICE", "LOCAL_RANK", nullptr};
  const int rank = rig::env_int(rig::kRankVariables, 0);
  const int nranks = rig::env_int(rig::kSizeVariables, 1);
  const int device = rig::env_int(kDeviceVariables, 0);
  CK(cudaSetDevice(device));
  ncclComm_t comm = nullptr;
  NK(ncclCommInitRank(&comm, nranks, share_id(rank, id_file), rank));
  cudaStream_t stream = nullptr;
  CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  float *send = nullptr, *recv = nullptr;
  CK(cudaMalloc(&send, end));
  CK(cudaMalloc(&recv, end));
  CK(cudaMemset(send, 0, end));
  CK(cudaMemset(recv, 0, end));
  std::printf("# host_time_probe: rank %d of %d on GPU %d, %d calls per size after %d, float sum\n", rank, nranks,
              device, calls, warmup);
  std::printf("# rank bytes placement median_us mean_us p90_us max_us\n");
  std::vector<double> us(static_cast<size_t>(calls));
  for (size_t bytes = begin; bytes <= end; bytes *= static_cast<size_t>(factor)) {
    const size_t count = bytes / sizeof(float);
    for (const bool in_place : {false, true}) {
      const float* from = in_place ? recv : send;
      for (int i = 0; i < warmup; ++i) NK(ncclAllReduce(from, recv, count, ncclFloat, ncclSum, comm, stream));
      CK(cudaStreamSynchronize(stream));
      for (int i = 0; i < calls; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        const ncclResult_t r = ncclAllReduce(from, recv, count, ncclFloat, ncclSum, comm, stream);
        us[static_cast<size_t>(i)] = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
        NK(r);
      }
      CK(cudaStreamSynchronize(stream));
      const double mean = std::accumulate(us.begin(), us.end(), 0.0) / calls;
      std::vector<double> sorted = us;
      std::sort(sorted.begin(), sorted.end());
      const auto at = [&](double q) { return sorted[static_cast<size_t>(q * (calls - 1) + 0.5)]; };
      std::printf("%d %zu %s %.2f %.2f %.2f %.1f\n", rank, bytes, in_place ? "in" : "out", at(0.5), mean, at(0.9),
                  sorted.back());
      std::fflush(stdout);
    }
  }
  CK(cudaFree(send));
  CK(cudaFree(recv));
  NK(ncclCommDestroy(comm));
  if (rank == 0) std::remove(id_file.c_str());
  std::printf("# host_time_probe: rank %d done\n", rank);
  return 0;
}
