// One persistent thread per GPU: braid's collectives block their caller until the rank's part is
// done, so each rank needs its own thread. run_all() hands every thread the same job and returns
// when all finished; run_all_async() lets the caller do other work meanwhile (interference).
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace braid::bench {

class RankThreads {
 public:
  // Thread r binds to CUDA device devices[r].
  explicit RankThreads(std::vector<int> devices);
  ~RankThreads();
  RankThreads(const RankThreads&) = delete;
  RankThreads& operator=(const RankThreads&) = delete;

  int size() const { return static_cast<int>(devices_.size()); }
  void run_all(const std::function<void(int rank)>& job);
  void run_all_async(std::function<void(int rank)> job);
  void wait();

 private:
  void loop(int rank);

  std::vector<int> devices_;
  std::vector<std::thread> threads_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::function<void(int)> job_;
  unsigned long generation_ = 0;
  int running_ = 0;
  bool stop_ = false;
};

}  // namespace braid::bench
