// A stand-in for the CUDA runtime (built as libcudart.so in a folder of its own): the calls the gate
// interposes, counting what reaches them. cudaFree(p) with p non-null sleeps *p milliseconds.
#include <atomic>
#include <chrono>
#include <thread>

namespace {
std::atomic<int> g_frees{0}, g_launches{0};
}

extern "C" __attribute__((visibility("default"))) int cudaFree(void* p) {
  if (p != nullptr) std::this_thread::sleep_for(std::chrono::milliseconds(*static_cast<int*>(p)));
  g_frees.fetch_add(1);
  return 0;
}

struct Dim3 {
  unsigned x, y, z;
};

extern "C" __attribute__((visibility("default"))) int cudaLaunchKernel(const void*, Dim3, Dim3, void**, size_t, void*) {
  g_launches.fetch_add(1);
  return 0;
}

extern "C" __attribute__((visibility("default"))) int fake_runtime_frees() { return g_frees.load(); }
extern "C" __attribute__((visibility("default"))) int fake_runtime_launches() { return g_launches.load(); }
