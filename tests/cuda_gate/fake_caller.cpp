// An application library linked against the (fake) runtime and loaded with dlopen, as PyTorch's
// libraries are: its runtime calls bind to the gate when the gate is in the global scope.
#include <cstddef>

struct Dim3 {
  unsigned x, y, z;
};
extern "C" int cudaFree(void* p);
extern "C" int cudaLaunchKernel(const void* func, Dim3 grid, Dim3 block, void** args, size_t shared, void* stream);

extern "C" __attribute__((visibility("default"))) int caller_free(void* p) { return cudaFree(p); }
extern "C" __attribute__((visibility("default"))) int caller_launch(const void* func) {
  return cudaLaunchKernel(func, Dim3{1, 1, 1}, Dim3{32, 1, 1}, nullptr, 0, nullptr);
}
