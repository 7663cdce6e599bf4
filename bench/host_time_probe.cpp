// Host time per ncclAllReduce (or ncclAllGather) call, call by call: how long the calling thread is
// inside each call (steady clock around it), the median and mean over -n calls per size, out of
// place and in place.
// nccl-tests' -C 1 reports the mean of a loop of calls, which one slow call in 30 moves by
// microseconds; issue 18's bound is on the median. Runs through whatever ncclAllReduce the process
// gets: plain NCCL, or braid's with LD_PRELOAD. One process per rank, launched by mpiexec (PMI_RANK,
// PMI_SIZE) or torchrun (RANK, WORLD_SIZE); rank 0 hands NCCL's id over a file (--id-file). The GPU
// is NCCL_TESTS_DEVICE's, else the launcher's local rank (one GPU per rank), else 0. Sizes are the
// receive buffer's bytes, as nccl-tests counts them (an all_gather rank sends 1/nranks of them).
//   host_time_probe --id-file PATH [--coll all_reduce|all_gather] [-b 4K] [-e 256M] [-f 4] [-n 100] [-w 5]
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
  std::string id_file, coll = "all_reduce";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "-b") begin = rig::parse_size(argv[i + 1]);
    else if (flag == "-e") end = rig::parse_size(argv[i + 1]);
    else if (flag == "-f") factor = std::max(2, std::atoi(argv[i + 1]));
    else if (flag == "-n") calls = std::max(1, std::atoi(argv[i + 1]));
    else if (flag == "-w") warmup = std::max(0, std::atoi(argv[i + 1]));
    else if (flag == "--id-file") id_file = argv[i + 1];
    else if (flag == "--coll") coll = argv[i + 1];
    else std::fprintf(stderr, "host_time_probe: unknown flag %s\n", flag.c_str()), std::exit(2);
  }
  if (id_file.empty()) std::fprintf(stderr, "host_time_probe: --id-file is required\n"), std::exit(2);
  if (coll != "all_reduce" && coll != "all_gather")
    std::fprintf(stderr, "host_time_probe: --coll is all_reduce or all_gather\n"), std::exit(2);
  const bool gather = coll == "all_gather";
  static const char* const kDeviceVariables[] = {"NCCL_TESTS_DEVICE", "LOCAL_RANK", "MPI_LOCALRANKID",
                                                 "OMPI_COMM_WORLD_LOCAL_RANK", nullptr};
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
  std::printf("# host_time_probe: rank %d of %d on GPU %d, %d calls per size after %d, %s of floats%s\n", rank,
              nranks, device, calls, warmup, coll.c_str(), gather ? "" : " (sum)");
  std::printf("# rank bytes placement median_us mean_us p90_us max_us\n");
  std::vector<double> us(static_cast<size_t>(calls));
  for (size_t bytes = begin; bytes <= end; bytes *= static_cast<size_t>(factor)) {
    const size_t count = bytes / sizeof(float);
    // An all_gather sends count / nranks elements; in place, from its own slot of the receive buffer.
    const size_t send_count = gather ? count / static_cast<size_t>(nranks) : count;
    if (send_count == 0) continue;
    const auto call = [&](const float* from) {
      return gather ? ncclAllGather(from, recv, send_count, ncclFloat, comm, stream)
                    : ncclAllReduce(from, recv, count, ncclFloat, ncclSum, comm, stream);
    };
    for (const bool in_place : {false, true}) {
      const float* from = !in_place ? send : gather ? recv + static_cast<size_t>(rank) * send_count : recv;
      for (int i = 0; i < warmup; ++i) NK(call(from));
      CK(cudaStreamSynchronize(stream));
      for (int i = 0; i < calls; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        const ncclResult_t r = call(from);
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
