// A stand-in for an NCCL application: linked against the real libnccl, run by preload_test
// with and without LD_PRELOAD=libbraid.so. Prints what it sees, one `key=value` per line.
#include <dlfcn.h>
#include <nccl.h>

#include <cstdio>

int main() {
  int version = 0;
  const ncclResult_t result = ncclGetVersion(&version);
  Dl_info info{};
  const bool found = dladdr(reinterpret_cast<void*>(&ncclGetVersion), &info) != 0;
  std::printf("version=%d\nresult=%d\nbound_to=%s\n", version, static_cast<int>(result),
              found && info.dli_fname ? info.dli_fname : "?");
  const ncclResult_t start = ncclGroupStart();
  const ncclResult_t end = ncclGroupEnd();
  std::printf("group=%d,%d\nunmatched_end=%d\n", static_cast<int>(start), static_cast<int>(end),
              static_cast<int>(ncclGroupEnd()));
  return 0;
}
