// When a collective returns, every signal it queued on the device has fired. A signal still
// queued would store into the control segment after the communicator unmapped it: that was a
// SIGSEGV at teardown, seen once in CI with ranks as threads (a device reduction's trailing
// raise of `consumed`, which nothing waited for). Here a slow compute queue makes the window wide.
#include <gtest/gtest.h>

#include <array>
#include <functional>
#include <mutex>

#include "common/settings.h"
#include "device/cpu_backend.h"
#include "harness.h"
#include "support/sanitizer_suppressions.h"  // the test changes settings

namespace braid {
namespace {

// The CPU backend, with every signal it is given recorded, and an effect-free copy of a few MiB
// queued before each raise on the compute queue: the queue thread reaches the raise late, as a
// descheduled thread on a loaded machine would.
class RecordingBackend final : public device::Backend {
 public:
  RecordingBackend() : delay_src_(kDelayBytes, 1), delay_dst_(kDelayBytes, 0) {}

  // The signals queued since the last call that have not fired yet.
  std::vector<device::Signal> unfired() {
    std::lock_guard lock(mutex_);
    std::vector<device::Signal> left;
    for (const auto& s : queued_)
      if (s.counter->load(std::memory_order_acquire) < s.value) left.push_back(s);
    queued_.clear();
    return left;
  }

  int num_queues() const override { return inner_.num_queues(); }
  Result d2h(int q, void* host, const void* dev, size_t bytes, device::Signal done) override {
    return inner_.d2h(q, host, dev, bytes, record(done));
  }
  Result h2d(int q, void* dev, const void* host, size_t bytes, device::Signal done) override {
    return inner_.h2d(q, dev, host, bytes, record(done));
  }
  Result copy(int q, void* dst, const void* src, size_t bytes, device::Signal done) override {
    return inner_.copy(q, dst, src, bytes, record(done));
  }
  Result wait(int q, device::Signal until) override { return inner_.wait(q, until); }
  Result raise(int q, device::Signal signal) override {
    if (q == device::kQueueCompute)
      BRAID_TRY(inner_.copy(q, delay_dst_.data(), delay_src_.data(), kDelayBytes, {}));
    return inner_.raise(q, record(signal));
  }
  Result reduce(int q, DataType type, RedOp op, void* dst, const void* src, size_t n,
                const reduce::OpScalar* dst_scale, const reduce::OpScalar* src_scale,
                device::Signal done) override {
    return inner_.reduce(q, type, op, dst, src, n, dst_scale, src_scale, record(done));
  }
  Result scale(int q, DataType type, void* dst, const void* src, size_t n,
               const reduce::OpScalar& scalar, device::Signal done) override {
    return inner_.scale(q, type, dst, src, n, scalar, record(done));
  }
  Result divide(int q, DataType type, void* data, size_t n, uint64_t divisor,
                device::Signal done) override {
    return inner_.divide(q, type, data, n, divisor, record(done));
  }
  void* device_scratch(size_t bytes) override { return inner_.device_scratch(bytes); }
  Result register_host(void* ptr, size_t bytes) override { return inner_.register_host(ptr, bytes); }
  Result unregister_host(void* ptr) override { return inner_.unregister_host(ptr); }
  Result begin_collective() override { return inner_.begin_collective(); }
  Result end_collective() override { return inner_.end_collective(); }
  void set_timeout(double seconds) override { inner_.set_timeout(seconds); }
  void set_abort_flag(const std::atomic<uint64_t>* flag) override { inner_.set_abort_flag(flag); }
  void abort() override { inner_.abort(); }
  Result status(std::string* message) const override { return inner_.status(message); }

 private:
  static constexpr size_t kDelayBytes = size_t{8} << 20;

  device::Signal record(device::Signal s) {
    if (!s.empty()) {
      std::lock_guard lock(mutex_);
      queued_.push_back(s);
    }
    return s;
  }

  std::mutex mutex_;
  std::vector<device::Signal> queued_;
  std::vector<unsigned char> delay_src_, delay_dst_;
  device::CpuBackend inner_;  // last: its queue threads stop before the buffers above go away
};

TEST(EngineQueuedSignals, EverySignalHasFiredWhenACollectiveReturns) {
  setenv("BRAID_REDUCE_PLACEMENT", "device", 1);  // device reductions: the trailing raise
  setenv("BRAID_TIMEOUT", "10", 1);  // a rank that stops early holds its peers this long
  settings_reload();
  constexpr int kRanks = 3;
  constexpr size_t kCount = 4099;
  std::array<RecordingBackend, kRanks> backends;
  auto outcomes = test::run_ranks(
      test::Mode::Threads, kRanks, test::load_test_topology(), 0,
      [&](engine::Communicator& comm, int r, unsigned char*) {
        std::vector<float> send(kCount * kRanks, 1.0f + static_cast<float>(r)), recv(kCount * kRanks, 0.0f);
        float* in = send.data();
        float* out = recv.data();
        const auto f32 = DataType::Float32;
        const auto sum = RedOp::Sum;
        const std::vector<std::pair<const char*, std::function<Result()>>> calls = {
            {"all_reduce", [&] { return comm.all_reduce(in, out, kCount, f32, sum); }},
            {"reduce", [&] { return comm.reduce(in, out, kCount, f32, sum, 0); }},
            {"reduce (a range)",
             [&] {
               return comm.collective_range(Collective::Reduce, in, out, kCount, f32, sum, 1, nullptr,
                                            engine::BlockRange{3, kCount - 7});
             }},
            {"reduce_scatter", [&] { return comm.reduce_scatter(in, out, kCount, f32, sum); }},
            {"all_gather", [&] { return comm.all_gather(in, out, kCount, f32); }},
            {"broadcast", [&] { return comm.broadcast(in, out, kCount, f32, 2); }},
        };
        for (const auto& [name, call] : calls) {
          BRAID_TRY(call());
          const auto left = backends[r].unfired();
          if (!left.empty())
            return fail(Result::InternalError, "%s returned with %zu queued signal(s) not yet fired", name,
                        left.size());
        }
        return Result::Success;
      },
      [&](int r) -> device::Backend* { return &backends[r]; });
  unsetenv("BRAID_REDUCE_PLACEMENT");
  unsetenv("BRAID_TIMEOUT");
  settings_reload();
  for (int r = 0; r < kRanks; ++r)
    EXPECT_EQ(outcomes[r].result, Result::Success) << "rank " << r << ": " << outcomes[r].error;
}

}  // namespace
}  // namespace braid
