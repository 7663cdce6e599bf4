#include "peer/allocation_share.h"

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstring>
#include <span>

#include "cuda/driver_calls.h"
#include "peer/cumem_share.h"

namespace braid::peer {

namespace {

static_assert(sizeof(cudaIpcMemHandle_t) == kIpcHandleWords * sizeof(uint64_t));

std::span<uint64_t, kAllocationWords> record_words(uint64_t* record) {
  return std::span<uint64_t, kAllocationWords>(record, kAllocationWords);
}

// Legacy CUDA IPC exports whole allocations: the one holding [buffer, buffer + bytes).
bool export_cuda_ipc(const void* buffer, size_t bytes, uint64_t* record, uint64_t* offset) {
  const cuda::DriverCalls& d = cuda::driver();
  const auto p = reinterpret_cast<CUdeviceptr>(buffer);
  CUdeviceptr base = 0;
  size_t size = 0;
  cudaIpcMemHandle_t handle;
  if (d.mem_get_address_range == nullptr || d.mem_get_address_range(&base, &size, p) != CUDA_SUCCESS ||
      p + bytes > base + size || cudaIpcGetMemHandle(&handle, reinterpret_cast<void*>(base)) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  uint64_t words[kIpcHandleWords];
  std::memcpy(words, &handle, sizeof handle);
  write_cuda_ipc_record(words, record_words(record));
  *offset = p - base;
  return true;
}

}  // namespace

bool export_buffer(const void* buffer, size_t bytes, bool fd_passing, uint64_t* record, uint64_t* offset) {
  if (buffer == nullptr) return false;
  if (fd_passing) {
    CuMemAllocation a;
    switch (export_cumem(buffer, bytes, &a, offset)) {
      case CuMemExport::Exported:
        write_cumem_record(a, record_words(record));
        return true;
      case CuMemExport::Unshareable:
        return false;
      case CuMemExport::NotCuMem:
        break;
    }
  }
  return export_cuda_ipc(buffer, bytes, record, offset);
}

Result open_exported(const MappingCache::Key& record, unsigned char** base) {
  CuMemAllocation a;
  if (read_cumem_record(record, &a)) {
    int device = 0;
    if (cudaGetDevice(&device) != cudaSuccess) {
      cudaGetLastError();
      return fail(Result::UnhandledCudaError, "cudaGetDevice failed before mapping a peer's cuMem allocation");
    }
    return import_cumem(a, device, base);
  }
  if (allocation_kind(record) != AllocationKind::CudaIpc)
    return fail(Result::InternalError, "a peer shared an allocation of unknown kind %llu",
                static_cast<unsigned long long>(record[0]));
  cudaIpcMemHandle_t handle;
  std::memcpy(&handle, cuda_ipc_handle(record).data(), sizeof handle);
  void* p = nullptr;
  const cudaError_t e = cudaIpcOpenMemHandle(&p, handle, cudaIpcMemLazyEnablePeerAccess);
  if (e != cudaSuccess) cudaGetLastError();
  // Not yet a failure: the mapping cache closes the mappings that may cover it and tries again.
  if (e == cudaErrorAlreadyMapped)
    return fail_softly(Result::UnhandledCudaError, "cudaIpcOpenMemHandle: %s", cudaGetErrorString(e));
  if (e != cudaSuccess) return fail(Result::UnhandledCudaError, "cudaIpcOpenMemHandle: %s", cudaGetErrorString(e));
  *base = static_cast<unsigned char*>(p);
  return Result::Success;
}

void close_exported(const MappingCache::Key& record, unsigned char* base) {
  CuMemAllocation a;
  if (read_cumem_record(record, &a)) return unmap_cumem(base, a.size);
  cudaIpcCloseMemHandle(base);
}

}  // namespace braid::peer
