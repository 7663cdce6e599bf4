// Background PCIe traffic (HyLink's checkpoint test): on every GPU, bulk cudaMemcpyAsync D2H and
// H2D bursts back to back, from its own threads and streams, while switched on.
#pragma once

#include <atomic>
#include <cstddef>
#include <thread>
#include <vector>

namespace braid::bench {

class PcieNoise {
 public:
  PcieNoise(const std::vector<int>& devices, size_t bytes);
  ~PcieNoise();
  PcieNoise(const PcieNoise&) = delete;
  PcieNoise& operator=(const PcieNoise&) = delete;

  void set(bool on) { on_.store(on); }
  bool on() const { return on_.load(); }
  // Bursts completed so far (all GPUs): shows the noise really ran.
  long bursts() const { return bursts_.load(); }

 private:
  void loop(int device);

  size_t bytes_;
  std::atomic<bool> on_{false};
  std::atomic<bool> stop_{false};
  std::atomic<long> bursts_{0};
  std::vector<std::thread> threads_;
};

}  // namespace braid::bench
