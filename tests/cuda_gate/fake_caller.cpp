// An application library linked against the (fake) runtime and loaded with dlopen, as PyTorch's
// libraries are: its runtime calls bind to the gate when the gate is in the global scope.
#include <cstddef>

struct Dim3 {
  unsigned x, y, z;
};
extern "C" int cudaFree(void* p);
extern "C" int cudaLaunchKernel(const void* func, Dim3 grid, Dim3 block, void** args, size_t shared, void* stream);

// Not tail calls: the gate finds a caller's runtime from its return address, which a tail call
// would leave in the test binary.
extern "C" __attribute__((visibility("default"))) int caller_free(void* p) {
  const volatile int r = cudaFree(p);
  return r;
}
extern "C" __attribute__((visibility("default"))) int caller_launch(const void* func) {
  const volatile int r = cudaLaunchKernel(func, Dim3{1, 1, 1}, Dim3{32, 1, 1}, nullptr, 0, nullptr);
  return r;
}
