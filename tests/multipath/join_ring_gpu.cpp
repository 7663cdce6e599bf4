// The join ring on a real GPU: a stream joined to call k waits until the completion word reaches
// k, no earlier; slots are reused many times over; a caller ahead of the ring is told so.
#include "multipath/join_ring.h"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <new>
#include <thread>

namespace braid::multipath {
namespace {

class JoinRingGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) GTEST_SKIP() << "no GPU";
    ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
    void* host = nullptr;
    ASSERT_EQ(cudaHostAlloc(&host, sizeof(std::atomic<uint64_t>), cudaHostAllocMapped | cudaHostAllocPortable), cudaSuccess);
    done_ = new (host) std::atomic<uint64_t>(0);
    void* device = nullptr;
    ASSERT_EQ(cudaHostGetDevicePointer(&device, host, 0), cudaSuccess);
    done_device_ = reinterpret_cast<unsigned long long>(device);
    ASSERT_EQ(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), cudaSuccess);
  }
  void TearDown() override {
    if (done_ != nullptr) done_->store(uint64_t{1} << 62);  // every queued wait passes
    ring_.reset();
    if (stream_ != nullptr) cudaStreamSynchronize(stream_), cudaStreamDestroy(stream_);
    if (done_ != nullptr) cudaFreeHost(done_);
  }
  // Whether `stream_` finishes what is queued within a while (it polls host memory).
  bool drains() {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (std::chrono::steady_clock::now() < until) {
      const cudaError_t q = cudaStreamQuery(stream_);
      if (q == cudaSuccess) return true;
      if (q != cudaErrorNotReady) return false;
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    return false;
  }
  std::atomic<uint64_t>* done_ = nullptr;
  unsigned long long done_device_ = 0;
  cudaStream_t stream_ = nullptr;
  std::unique_ptr<JoinRing> ring_;
};

TEST_F(JoinRingGpu, AStreamWaitsForItsCallAndNoLonger) {
  ASSERT_EQ(JoinRing::create(done_device_, 4, &ring_), Result::Success);
  ASSERT_TRUE(ring_->join(stream_, 3));
  done_->store(2);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(cudaStreamQuery(stream_), cudaErrorNotReady);  // call 3 has not ended
  done_->store(3);
  EXPECT_TRUE(drains());
}

TEST_F(JoinRingGpu, SlotsAreReusedOnlyAfterTheCallerPassed) {
  constexpr size_t kSlots = 4;
  ASSERT_EQ(JoinRing::create(done_device_, kSlots, &ring_), Result::Success);
  // Calls 1..4 are queued at creation; 5 is not until the caller passed 1.
  EXPECT_FALSE(ring_->join(stream_, kSlots + 1));
  for (uint64_t k = 1; k <= 200; ++k) {
    ASSERT_EQ(ring_->top_up(), Result::Success);
    ASSERT_TRUE(ring_->join(stream_, k)) << "call " << k;
    ring_->passed(k);
    if (k % 7 == 0) {
      // Calls up to k - 1 ended, k not yet: the stream must still wait.
      done_->store(k - 1);
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      EXPECT_EQ(cudaStreamQuery(stream_), cudaErrorNotReady) << "call " << k;
      done_->store(k);
      ASSERT_TRUE(drains()) << "call " << k;
    }
  }
  done_->store(200);
  EXPECT_TRUE(drains());
}

}  // namespace
}  // namespace braid::multipath
