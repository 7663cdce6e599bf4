#include "measure.h"

#include <atomic>
#include <barrier>
#include <chrono>

#include "check.h"
#include "pattern.h"

namespace braid::bench {

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

DeviceBuffers::DeviceBuffers(RankThreads& threads, size_t bytes, bool with_host)
    : threads_(threads), bytes_(bytes), send_(threads.size()), recv_(threads.size()),
      host_(threads.size()) {
  const size_t alloc = bytes_ == 0 ? 1 : bytes_;
  threads.run_all([&](int rank) {
    BENCH_CUDA(cudaMalloc(&send_[rank], alloc));
    BENCH_CUDA(cudaMalloc(&recv_[rank], alloc));
    BENCH_CUDA(cudaMemset(send_[rank], 0, alloc));
    BENCH_CUDA(cudaMemset(recv_[rank], 0, alloc));
    if (with_host) host_[rank].reset(new unsigned char[alloc]);
  });
}

DeviceBuffers::~DeviceBuffers() {
  threads_.run_all([&](int rank) {
    cudaFree(send_[rank]);
    cudaFree(recv_[rank]);
  });
}

const void* Measure::send_arg(const CaseSpec& spec, int rank) const {
  if (!spec.in_place) return buffers_.send(rank);
  const size_t offset = spec.shape.send_inplace_offset * datatype_size(spec.type) * rank;
  return static_cast<unsigned char*>(buffers_.recv(rank)) + offset;
}

void* Measure::recv_arg(const CaseSpec& spec, int rank) const {
  const size_t offset = spec.in_place ? spec.shape.recv_inplace_offset * datatype_size(spec.type) * rank : 0;
  return static_cast<unsigned char*>(buffers_.recv(rank)) + offset;
}

// Poisons the outputs (0xFF: NaN for floats, never an expected integer) and writes the inputs.
void Measure::upload_inputs(const CaseSpec& spec) {
  const Pattern pattern(spec.collective, spec.type, spec.op, threads_.size());
  const size_t esize = datatype_size(spec.type);
  threads_.run_all([&](int rank) {
    const size_t recv_bytes = spec.shape.recv_count * esize;
    const size_t send_bytes = spec.shape.send_count * esize;
    if (recv_bytes > 0) BENCH_CUDA(cudaMemset(buffers_.recv(rank), 0xFF, recv_bytes));
    if (send_bytes == 0) return;
    unsigned char* host = buffers_.host(rank);
    if (host == nullptr) {  // -c 0: no host buffers; time on zeros
      BENCH_CUDA(cudaMemset(const_cast<void*>(send_arg(spec, rank)), 0, send_bytes));
      BENCH_CUDA(cudaDeviceSynchronize());
      return;
    }
    pattern.fill_input(rank, 0, spec.shape.send_count, host);
    BENCH_CUDA(cudaMemcpy(const_cast<void*>(send_arg(spec, rank)), host, send_bytes, cudaMemcpyHostToDevice));
    BENCH_CUDA(cudaDeviceSynchronize());
  });
}

size_t Measure::count_wrong(const CaseSpec& spec) {
  const Pattern pattern(spec.collective, spec.type, spec.op, threads_.size());
  const size_t esize = datatype_size(spec.type);
  const size_t n = spec.shape.param_count;
  const int nranks = threads_.size();
  std::vector<size_t> wrong(nranks, 0);
  threads_.run_all([&](int rank) {
    if (spec.collective == Collective::Reduce && rank != spec.root) return;  // no output
    const size_t bytes = spec.shape.recv_count * esize;
    if (bytes == 0) return;
    unsigned char* host = buffers_.host(rank);
    BENCH_CUDA(cudaMemcpy(host, recv_arg(spec, rank), bytes, cudaMemcpyDeviceToHost));
    size_t w = 0;
    switch (spec.collective) {
      case Collective::AllReduce:
      case Collective::Reduce: w = pattern.count_wrong_reduced(0, n, host); break;
      case Collective::ReduceScatter: w = pattern.count_wrong_reduced(rank * n, n, host); break;
      case Collective::Broadcast: w = pattern.count_wrong_copy(spec.root, 0, n, host); break;
      case Collective::AllGather:
        for (int q = 0; q < nranks; ++q) w += pattern.count_wrong_copy(q, 0, n, host + q * n * esize);
        break;
      case Collective::AllToAll:
        for (int q = 0; q < nranks; ++q) w += pattern.count_wrong_copy(q, rank * n, n, host + q * n * esize);
        break;
    }
    wrong[rank] = w;
  });
  size_t total = 0;
  for (size_t w : wrong) total += w;
  return total;
}

PathResult Measure::result(const CaseSpec& spec, double seconds, size_t wrong) const {
  PathResult r;
  const double per_iter = iters_ > 0 ? seconds / iters_ : 0;
  r.time_us = per_iter * 1e6;
  r.algbw = algbw_gbps(spec.collective, spec.shape, spec.type, threads_.size(), per_iter);
  r.busbw = r.algbw * busbw_factor(spec.collective, threads_.size());
  r.wrong = wrong;
  return r;
}

PathResult Measure::run_on_rank_threads(const CaseSpec& spec, const IssueOne& issue,
                                        const std::function<cudaStream_t(int rank)>& stream_of) {
  upload_inputs(spec);
  std::barrier sync(threads_.size());
  double start = 0, end = 0;
  threads_.run_all([&](int rank) {
    const void* send = send_arg(spec, rank);
    void* recv = recv_arg(spec, rank);
    for (int i = 0; i < warmup_; ++i) issue(rank, send, recv);
    BENCH_CUDA(cudaStreamSynchronize(stream_of(rank)));
    sync.arrive_and_wait();
    if (rank == 0) start = now_seconds();
    for (int i = 0; i < iters_; ++i) issue(rank, send, recv);
    BENCH_CUDA(cudaStreamSynchronize(stream_of(rank)));
    sync.arrive_and_wait();
    if (rank == 0) end = now_seconds();
  });
  size_t wrong = 0;
  if (check_) {
    upload_inputs(spec);
    threads_.run_all([&](int rank) {
      issue(rank, send_arg(spec, rank), recv_arg(spec, rank));
      BENCH_CUDA(cudaStreamSynchronize(stream_of(rank)));
    });
    wrong = count_wrong(spec);
  }
  return result(spec, end - start, wrong);
}

PathResult Measure::run_braid(BraidPath& braid, const CaseSpec& spec) {
  braid.prepare(spec.type);
  return run_on_rank_threads(
      spec, [&](int rank, const void* send, void* recv) { braid.issue(rank, spec, send, recv); },
      [&](int rank) { return braid.stream(rank); });
}

PathResult Measure::run_nccl(NcclPath& nccl, const CaseSpec& spec) {
  nccl.prepare(spec.type);
  return run_on_rank_threads(
      spec, [&](int rank, const void* send, void* recv) { nccl.issue(rank, spec, send, recv); },
      [&](int rank) { return nccl.stream(rank); });
}

}  // namespace braid::bench
