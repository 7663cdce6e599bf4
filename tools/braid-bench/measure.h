// Runs one case on one path: inputs from the pattern, warm-up, the timed iterations (wall clock
// across all ranks between two barriers, after the streams drained) and one checked run.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

#include "paths.h"
#include "rank_threads.h"

namespace braid::bench {

// Wall-clock seconds (steady clock) for the benchmark's timings.
double now_seconds();

struct PathResult {
  double time_us = 0;   // per iteration
  double algbw = 0;     // GB/s
  double busbw = 0;     // GB/s
  size_t wrong = 0;     // elements differing from the expected (all ranks)
};

// A send and a receive buffer of `bytes` on every GPU, and a host buffer per rank for checks.
class DeviceBuffers {
 public:
  DeviceBuffers(RankThreads& threads, size_t bytes, bool with_host);
  ~DeviceBuffers();
  DeviceBuffers(const DeviceBuffers&) = delete;
  DeviceBuffers& operator=(const DeviceBuffers&) = delete;

  size_t bytes() const { return bytes_; }
  void* send(int rank) const { return send_[rank]; }
  void* recv(int rank) const { return recv_[rank]; }
  unsigned char* host(int rank) { return host_[rank].get(); }

 private:
  RankThreads& threads_;
  size_t bytes_;
  std::vector<void*> send_, recv_;
  std::vector<std::unique_ptr<unsigned char[]>> host_;
};

class Measure {
 public:
  Measure(RankThreads& threads, DeviceBuffers& buffers, int warmup, int iters, bool check)
      : threads_(threads), buffers_(buffers), warmup_(warmup), iters_(iters), check_(check) {}

  PathResult run_braid(BraidPath& braid, const CaseSpec& spec);
  PathResult run_nccl(NcclPath& nccl, const CaseSpec& spec);

  // The call's arguments for `rank` (nccl-tests' in-place layout: everything in recv).
  const void* send_arg(const CaseSpec& spec, int rank) const;
  void* recv_arg(const CaseSpec& spec, int rank) const;

 private:
  void upload_inputs(const CaseSpec& spec);
  size_t count_wrong(const CaseSpec& spec);
  PathResult result(const CaseSpec& spec, double seconds, size_t wrong) const;
  // Both columns are launched alike, as nccl-tests' -t and torchrun launch them: every rank issues
  // its own calls from its own thread (`issue(rank, send, recv)`, on `stream_of(rank)`), so that a
  // call braid hands to NCCL reads 1.00 against NCCL alone.
  using IssueOne = std::function<void(int rank, const void* send, void* recv)>;
  PathResult run_on_rank_threads(const CaseSpec& spec, const IssueOne& issue,
                                 const std::function<cudaStream_t(int rank)>& stream_of);

  RankThreads& threads_;
  DeviceBuffers& buffers_;
  int warmup_;
  int iters_;
  bool check_;
};

}  // namespace braid::bench
