// The drop-in's CUDA gate (src/cuda_gate/) on CPU, against a fake runtime: an application library
// loaded with dlopen after the gate has its runtime calls bracketed by braid's hooks and forwarded
// to its own runtime; a kernel's first launch is bracketed, later ones are not; and with braid's
// hooks (common/lane_gate.h) a device-wide call waits for a job in hand, while a job handed in
// during such a call holds back until it ends.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "common/lane_gate.h"
#include "cuda_gate/cuda_gate.h"

namespace {

using Clock = std::chrono::steady_clock;

std::atomic<int> g_began{0}, g_ended{0};
void count_began(const char*) { g_began.fetch_add(1); }
void count_ended() { g_ended.fetch_add(1); }
const braid_cuda_gate_hooks kCounting{&count_began, &count_ended};

void braid_began(const char* what) { braid::device_wide_call_began(what); }
void braid_ended() { braid::device_wide_call_ended(); }
const braid_cuda_gate_hooks kBraids{&braid_began, &braid_ended};

struct Loaded {
  void (*install)(const braid_cuda_gate_hooks*) = nullptr;
  unsigned long (*bracketed)() = nullptr;
  int (*free)(void*) = nullptr;
  int (*launch)(const void*) = nullptr;
  int (*frees)() = nullptr;
  int (*launches)() = nullptr;
};

// The gate into the global scope first, then the application's library (and with it its runtime)
// locally, as libbraid.so's loader and Python do.
const Loaded& loaded() {
  static const Loaded once = [] {
    Loaded l;
    void* gate = dlopen(BRAID_GATE_LIBRARY, RTLD_NOW | RTLD_GLOBAL);
    EXPECT_NE(gate, nullptr) << dlerror();
    void* caller = dlopen(BRAID_GATE_CALLER, RTLD_NOW | RTLD_LOCAL);
    EXPECT_NE(caller, nullptr) << dlerror();
    if (gate == nullptr || caller == nullptr) return l;
    l.install = reinterpret_cast<decltype(l.install)>(dlsym(gate, "braid_cuda_gate_install"));
    l.bracketed = reinterpret_cast<decltype(l.bracketed)>(dlsym(gate, "braid_cuda_gate_bracketed"));
    l.free = reinterpret_cast<decltype(l.free)>(dlsym(caller, "caller_free"));
    l.launch = reinterpret_cast<decltype(l.launch)>(dlsym(caller, "caller_launch"));
    l.frees = reinterpret_cast<decltype(l.frees)>(dlsym(caller, "fake_runtime_frees"));
    l.launches = reinterpret_cast<decltype(l.launches)>(dlsym(caller, "fake_runtime_launches"));
    return l;
  }();
  return once;
}

TEST(CudaGate, BracketsTheApplicationsDeviceWideCallsAndForwardsThem) {
  const Loaded& l = loaded();
  ASSERT_TRUE(l.install && l.bracketed && l.free && l.launch && l.frees && l.launches);
  l.install(nullptr);
  const int frees = l.frees();
  EXPECT_EQ(l.free(nullptr), 0);  // no hooks: straight through
  EXPECT_EQ(l.frees(), frees + 1);
  l.install(&kCounting);
  const int began = g_began.load();
  EXPECT_EQ(l.free(nullptr), 0);
  EXPECT_EQ(l.frees(), frees + 2);
  EXPECT_EQ(g_began.load(), began + 1);
  EXPECT_EQ(g_ended.load(), began + 1);
  l.install(nullptr);
}

// A process holding two runtimes: each caller reaches the one it links, not the first one found.
TEST(CudaGate, EachCallerReachesItsOwnRuntime) {
  const Loaded& l = loaded();
  ASSERT_TRUE(l.install && l.free && l.frees);
  void* other = dlopen(BRAID_GATE_OTHER_CALLER, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(other, nullptr) << dlerror();
  auto other_free = reinterpret_cast<int (*)(void*)>(dlsym(other, "caller_free"));
  auto other_frees = reinterpret_cast<int (*)()>(dlsym(other, "fake_runtime_frees"));
  ASSERT_TRUE(other_free && other_frees);
  l.install(&kCounting);
  const int began = g_began.load(), mine = l.frees(), theirs = other_frees();
  EXPECT_EQ(l.free(nullptr), 0);
  EXPECT_EQ(other_free(nullptr), 0);
  EXPECT_EQ(other_free(nullptr), 0);
  EXPECT_EQ(l.frees(), mine + 1);
  EXPECT_EQ(other_frees(), theirs + 2);
  EXPECT_EQ(g_began.load(), began + 3);  // both through the gate
  l.install(nullptr);
}

TEST(CudaGate, BracketsOnlyAKernelsFirstLaunch) {
  const Loaded& l = loaded();
  ASSERT_TRUE(l.install && l.launch && l.launches);
  l.install(&kCounting);
  static const int kernel_a = 0, kernel_b = 0;
  const int began = g_began.load(), launches = l.launches();
  for (int i = 0; i < 3; ++i) EXPECT_EQ(l.launch(&kernel_a), 0);
  EXPECT_EQ(g_began.load(), began + 1);
  EXPECT_EQ(l.launch(&kernel_b), 0);
  EXPECT_EQ(g_began.load(), began + 2);
  EXPECT_EQ(l.launches(), launches + 4);
  l.install(nullptr);
}

// With braid's hooks: a device-wide call enters only once no job is in hand.
TEST(CudaGate, ADeviceWideCallWaitsForTheJobsInHand) {
  const Loaded& l = loaded();
  ASSERT_TRUE(l.install && l.free);
  l.install(&kBraids);
  braid::lane_work_began();
  std::atomic<bool> returned{false};
  std::thread app([&] {
    l.free(nullptr);
    returned.store(true);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(returned.load()) << "the call went in with a job in hand";
  braid::lane_work_ended();
  app.join();
  EXPECT_TRUE(returned.load());
  l.install(nullptr);
}

// ... and a job handed in while a device-wide call is inside holds back until it returns (within
// kHoldBackSeconds), so its caller queues no stream wait the device could not pass meanwhile.
TEST(CudaGate, AJobHandedInDuringADeviceWideCallHoldsBack) {
  const Loaded& l = loaded();
  ASSERT_TRUE(l.install && l.free);
  l.install(&kBraids);
  int sleep_ms = 50;
  Clock::time_point call_returned;
  std::thread app([&] {
    l.free(&sleep_ms);
    call_returned = Clock::now();
  });
  while (braid::device_wide_calls() == 0) std::this_thread::yield();
  braid::lane_work_began();
  const auto handed_in = Clock::now();
  app.join();
  EXPECT_GE(handed_in, call_returned - std::chrono::milliseconds(1));
  EXPECT_EQ(braid::lanes_work_in_hand(), 1);
  braid::lane_work_ended();
  l.install(nullptr);
}

// A device-wide call that outlasts the hold-back: the job goes on after kHoldBackSeconds.
TEST(CudaGate, TheHoldBackIsBounded) {
  const Loaded& l = loaded();
  ASSERT_TRUE(l.install && l.free);
  l.install(&kBraids);
  int sleep_ms = static_cast<int>(braid::kHoldBackSeconds * 1000) * 5;
  std::thread app([&] { l.free(&sleep_ms); });
  while (braid::device_wide_calls() == 0) std::this_thread::yield();
  const auto began = Clock::now();
  braid::lane_work_began();
  const double held = std::chrono::duration<double>(Clock::now() - began).count();
  EXPECT_GE(held, braid::kHoldBackSeconds * 0.9);
  EXPECT_LT(held, braid::kHoldBackSeconds * 4);
  braid::lane_work_ended();
  app.join();
  l.install(nullptr);
}

// A child made by fork() while a split call is in hand has no progress thread: its device-wide
// calls must not wait for the parent's jobs.
TEST(CudaGate, AForkedChildStartsWithNothingInHand) {
  braid::lane_work_began();
  const pid_t child = fork();
  if (child == 0) _exit(braid::lanes_work_in_hand() == 0 && braid::device_wide_calls() == 0 ? 0 : 1);
  ASSERT_GT(child, 0);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ(braid::lanes_work_in_hand(), 1);
  braid::lane_work_ended();
}

}  // namespace
