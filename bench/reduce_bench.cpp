// Host reduction bandwidth: Sum of fp32 / bf16 / fp16 against memcpy of the same buffers, on
// 1..N threads that split the buffer (threads are started once per benchmark, not per iteration).
//
// Bandwidth is "bytes moved" per second: 3 x n x size for a reduction (read dst, read src,
// write dst) and 2 x n x size for memcpy (read src, write dst). The counter elem_GBps gives
// n x size per second for both, i.e. the rate at which one buffer's worth is processed.
#include <benchmark/benchmark.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "reduce/reduce.h"

namespace {

using braid::DataType;

// Each buffer is this big, far beyond the last-level cache.
constexpr size_t kBufferBytes = size_t(256) << 20;

struct Buffers {
  unsigned char* dst;
  unsigned char* src;
};

// Allocated and touched once for the whole program.
Buffers& buffers() {
  static Buffers b = [] {
    Buffers out{static_cast<unsigned char*>(std::aligned_alloc(4096, kBufferBytes)),
                static_cast<unsigned char*>(std::aligned_alloc(4096, kBufferBytes))};
    // 0x3C: a small normal value in fp32, bf16 and fp16 alike, so sums stay finite.
    std::memset(out.dst, 0x3C, kBufferBytes);
    std::memset(out.src, 0x3C, kBufferBytes);
    return out;
  }();
  return b;
}

// Runs work(thread_index) on `count` threads (the caller is thread 0) each time run() is
// called; the helper threads live as long as the pool.
class Pool {
 public:
  Pool(int count, std::function<void(int)> work) : work_(std::move(work)) {
    for (int t = 1; t < count; ++t) helpers_.emplace_back([this, t] { helper(t); });
  }
  ~Pool() {
    stop_.store(true);
    generation_.fetch_add(1);
    for (auto& h : helpers_) h.join();
  }
  void run() {
    done_.store(0);
    generation_.fetch_add(1, std::memory_order_release);
    work_(0);
    while (done_.load(std::memory_order_acquire) != static_cast<int>(helpers_.size())) {}
  }

 private:
  void helper(int index) {
    uint64_t seen = 0;
    for (;;) {
      uint64_t now;
      while ((now = generation_.load(std::memory_order_acquire)) == seen) std::this_thread::yield();
      seen = now;
      if (stop_.load()) return;
      work_(index);
      done_.fetch_add(1, std::memory_order_release);
    }
  }
  std::function<void(int)> work_;
  std::vector<std::thread> helpers_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> done_{0};
  std::atomic<bool> stop_{false};
};

// Slice [begin, end) of n elements for thread t of count, on whole cache lines where possible.
void slice(size_t n, size_t elem, int t, int count, size_t& begin, size_t& end) {
  const size_t per_line = 64 / elem;
  const size_t lines = (n + per_line - 1) / per_line;
  begin = std::min(n, lines * size_t(t) / size_t(count) * per_line);
  end = std::min(n, lines * size_t(t + 1) / size_t(count) * per_line);
}

void report(benchmark::State& state, size_t buffer_bytes, int moved_multiple) {
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(buffer_bytes) * moved_multiple);
  state.counters["elem_GBps"] = benchmark::Counter(double(state.iterations()) * double(buffer_bytes) / 1e9,
                                                   benchmark::Counter::kIsRate);
  state.counters["threads"] = double(state.range(0));
}

void BM_ReduceSum(benchmark::State& state, DataType type) {
  Buffers& b = buffers();
  const int threads = static_cast<int>(state.range(0));
  const size_t elem = braid::datatype_size(type);
  const size_t n = kBufferBytes / elem;
  Pool pool(threads, [&](int t) {
    size_t begin, end;
    slice(n, elem, t, threads, begin, end);
    braid::reduce::accumulate(type, braid::RedOp::Sum, b.dst + begin * elem, b.src + begin * elem, end - begin);
  });
  for (auto _ : state) pool.run();
  report(state, kBufferBytes, 3);
}

void BM_Memcpy(benchmark::State& state) {
  Buffers& b = buffers();
  const int threads = static_cast<int>(state.range(0));
  Pool pool(threads, [&](int t) {
    size_t begin, end;
    slice(kBufferBytes, 1, t, threads, begin, end);
    std::memcpy(b.dst + begin, b.src + begin, end - begin);
  });
  for (auto _ : state) pool.run();
  report(state, kBufferBytes, 2);
}

void thread_counts(benchmark::internal::Benchmark* bm) {
  const int max_threads = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  for (int t = 1; t <= max_threads; t *= 2) bm->Arg(t);
  if ((max_threads & (max_threads - 1)) != 0) bm->Arg(max_threads);
}

}  // namespace

BENCHMARK(BM_Memcpy)->Apply(thread_counts)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ReduceSum, float, DataType::Float32)->Apply(thread_counts)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ReduceSum, bfloat16, DataType::Bfloat16)->Apply(thread_counts)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ReduceSum, half, DataType::Float16)->Apply(thread_counts)->UseRealTime()->Unit(benchmark::kMillisecond);

int main(int argc, char** argv) {
  benchmark::AddCustomContext("simd_target", braid::reduce::simd_target());
  benchmark::AddCustomContext("buffer_bytes", std::to_string(kBufferBytes));
  benchmark::AddCustomContext("bandwidth", "bytes/s = moved bytes: reduce 3*n*size, memcpy 2*n*size");
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
