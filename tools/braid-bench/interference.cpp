#include "interference.h"

#include <atomic>
#include <barrier>
#include <chrono>
#include <thread>

#include "check.h"

namespace braid::bench {

namespace {

double time_nccl(NcclPath& nccl, const CaseSpec& spec, const std::vector<const void*>& send,
                 const std::vector<void*>& recv, int iters) {
  nccl.synchronize();
  const double start = now_seconds();
  for (int i = 0; i < iters; ++i) nccl.issue_all(spec, send, recv);
  nccl.synchronize();
  return now_seconds() - start;
}

}  // namespace

InterferenceRow measure_interference(RankThreads& threads, BraidPath& braid, NcclPath& nccl,
                                     const Measure& nccl_layout, const Measure& braid_layout,
                                     const CaseSpec& spec, int warmup, int iters) {
  const int nranks = threads.size();
  iters = std::max(iters, 1);
  std::vector<const void*> send(nranks);
  std::vector<void*> recv(nranks);
  for (int r = 0; r < nranks; ++r) {
    send[r] = nccl_layout.send_arg(spec, r);
    recv[r] = nccl_layout.recv_arg(spec, r);
  }
  nccl.prepare(spec.type);
  braid.prepare(spec.type);
  for (int i = 0; i < warmup; ++i) nccl.issue_all(spec, send, recv);
  InterferenceRow row;
  row.bytes = spec.shape.row_bytes;
  row.nccl_alone_us = time_nccl(nccl, spec, send, recv, iters) / iters * 1e6;

  // braid back to back until told to stop; the ranks agree on stopping at a barrier.
  std::atomic<bool> stop{false};
  std::atomic<long> braid_done{0};
  bool keep_going = true;
  std::barrier sync(nranks, [&]() noexcept { keep_going = !stop.load(); });
  const double braid_start = now_seconds();
  threads.run_all_async([&](int rank) {
    const void* bsend = braid_layout.send_arg(spec, rank);
    void* brecv = braid_layout.recv_arg(spec, rank);
    for (;;) {
      sync.arrive_and_wait();
      if (!keep_going) break;
      braid.issue(rank, spec, bsend, brecv);
      if (rank == 0) braid_done.fetch_add(1);
    }
    BENCH_CUDA(cudaStreamSynchronize(braid.stream(rank)));
  });
  // Start timing NCCL once braid's traffic is flowing.
  while (braid_done.load() < 1) std::this_thread::sleep_for(std::chrono::microseconds(50));
  row.nccl_with_braid_us = time_nccl(nccl, spec, send, recv, iters) / iters * 1e6;
  stop.store(true);
  threads.wait();
  const double braid_seconds = now_seconds() - braid_start;
  row.braid_iters = braid_done.load();
  if (braid_seconds > 0 && row.braid_iters > 0)
    row.braid_algbw = algbw_gbps(spec.collective, spec.shape, spec.type, nranks, braid_seconds / row.braid_iters);
  row.slowdown_pct = row.nccl_alone_us > 0 ? (row.nccl_with_braid_us / row.nccl_alone_us - 1) * 100 : 0;
  return row;
}

}  // namespace braid::bench
