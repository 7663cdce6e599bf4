#include "rank_threads.h"

#include <cuda_runtime.h>

#include "check.h"

namespace braid::bench {

RankThreads::RankThreads(std::vector<int> devices) : devices_(std::move(devices)) {
  for (int r = 0; r < size(); ++r) threads_.emplace_back([this, r] { loop(r); });
}

RankThreads::~RankThreads() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void RankThreads::run_all_async(std::function<void(int rank)> job) {
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait(lock, [&] { return running_ == 0; });
  job_ = std::move(job);
  running_ = size();
  ++generation_;
  cv_.notify_all();
}

void RankThreads::wait() {
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait(lock, [&] { return running_ == 0; });
}

void RankThreads::run_all(const std::function<void(int rank)>& job) {
  run_all_async(job);
  wait();
}

void RankThreads::loop(int rank) {
  BENCH_CUDA(cudaSetDevice(devices_[rank]));
  unsigned long seen = 0;
  for (;;) {
    std::function<void(int)> job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      job = job_;
    }
    job(rank);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (--running_ == 0) cv_.notify_all();
    }
  }
}

}  // namespace braid::bench
