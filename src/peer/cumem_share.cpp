#include "peer/cumem_share.h"

#include <cuda.h>
#include <cuda_runtime.h>
#include <unistd.h>

#include <algorithm>
#include <mutex>
#include <set>
#include <string>

#include "common/log.h"
#include "common/settings.h"
#include "cuda/driver_calls.h"

namespace braid::peer {

namespace {

constexpr CUmemAllocationHandleType kFdHandle = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;

// Buffers are exported every call: each reason a cuMem buffer stays unshareable is logged once.
CuMemExport unshareable(const char* why) {
  static std::mutex mutex;
  static std::set<std::string> said;
  std::lock_guard lock(mutex);
  if (said.insert(why).second)
    BRAID_INFO(Alloc, "a cuMem buffer cannot be shared with peer processes: %s (its share goes to NCCL)", why);
  return CuMemExport::Unshareable;
}

// A process-wide id of the physical allocation mapped at `p`, which a new allocation at the same
// address does not repeat. MEMORY_BLOCK_ID names the physical allocation; drivers without it
// give BUFFER_ID, unique per mapping, which is as good for telling a new allocation.
bool block_id(CUdeviceptr p, uint64_t* id) {
  const cuda::DriverCalls& d = cuda::driver();
  unsigned long long value = 0;
  if (d.pointer_get_attribute(&value, CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID, p) != CUDA_SUCCESS &&
      d.pointer_get_attribute(&value, CU_POINTER_ATTRIBUTE_BUFFER_ID, p) != CUDA_SUCCESS)
    return false;
  *id = value;
  return true;
}

// The broker's MakeFd: runs on its thread when a peer asks for a published allocation. The key
// is what export_cumem published (device, base, size, block id); the allocation is looked up
// again, so one freed since (or another mapped at its address) is refused, not exported.
Result make_allocation_fd(const FdKey& key, int* fd) {
  const cuda::DriverCalls& d = cuda::driver();
  const auto base = static_cast<CUdeviceptr>(key[1]);
  const cudaError_t set = cudaSetDevice(static_cast<int>(key[0]));
  if (set != cudaSuccess) {
    cudaGetLastError();
    return fail(Result::UnhandledCudaError, "cudaSetDevice(%d) to export an allocation: %s", static_cast<int>(key[0]),
                cudaGetErrorString(set));
  }
  CUmemGenericAllocationHandle handle = 0;
  if (d.mem_retain_allocation_handle(&handle, reinterpret_cast<void*>(base)) != CUDA_SUCCESS)
    return fail(Result::InvalidUsage, "the allocation at 0x%llx is no longer mapped",
                static_cast<unsigned long long>(base));
  CUdeviceptr now_base = 0;
  size_t now_size = 0;
  uint64_t now_block = 0;
  const bool same = d.mem_get_address_range(&now_base, &now_size, base) == CUDA_SUCCESS && now_base == base &&
                    now_size == key[2] && block_id(base, &now_block) && now_block == key[3];
  int exported = -1;
  const CUresult e = same ? d.mem_export_to_shareable_handle(&exported, handle, kFdHandle, 0) : CUDA_SUCCESS;
  d.mem_release(handle);
  if (!same)
    return fail(Result::InvalidUsage, "the allocation published at 0x%llx was freed (another is mapped there now)",
                static_cast<unsigned long long>(base));
  if (e != CUDA_SUCCESS)
    return fail(Result::UnhandledCudaError, "cuMemExportToShareableHandle: %s", cuda::driver_error_string(e));
  *fd = exported;
  return Result::Success;
}

}  // namespace

int fd_broker_wait_ms() { return static_cast<int>(std::clamp(settings().timeout * 1000.0, 1.0, 2e9)); }

Result process_fd_broker(FdBroker** out) {
  static std::mutex mutex;
  static FdBroker* broker = nullptr;
  static pid_t owner = 0;
  std::lock_guard lock(mutex);
  // A fork()ed child inherits the pointer but not the thread: it starts a broker of its own.
  if (broker == nullptr || owner != getpid()) {
    std::unique_ptr<FdBroker> started;
    BRAID_TRY(FdBroker::start(make_allocation_fd, &started));
    broker = started.release();
    owner = getpid();
  }
  *out = broker;
  return Result::Success;
}

CuMemExport export_cumem(const void* buffer, size_t bytes, CuMemAllocation* out, uint64_t* offset) {
  const cuda::DriverCalls& d = cuda::driver();
  const auto p = reinterpret_cast<CUdeviceptr>(buffer);
  if (d.mem_retain_allocation_handle == nullptr) return CuMemExport::NotCuMem;
  // Succeeds only for memory mapped through the virtual memory API.
  CUmemGenericAllocationHandle handle = 0;
  if (d.mem_retain_allocation_handle(&handle, const_cast<void*>(buffer)) != CUDA_SUCCESS) return CuMemExport::NotCuMem;
  if (!d.cumem_complete()) {
    d.mem_release(handle);
    return unshareable("the CUDA driver lacks some of the virtual memory calls");
  }
  CUmemAllocationProp prop{};
  const CUresult got = d.mem_get_allocation_properties_from_handle(&prop, handle);
  d.mem_release(handle);
  if (got != CUDA_SUCCESS) return unshareable("cuMemGetAllocationPropertiesFromHandle failed");
  if ((prop.requestedHandleTypes & kFdHandle) == 0)
    return unshareable("its allocation was made without CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR");
  if (prop.location.type != CU_MEM_LOCATION_TYPE_DEVICE) return unshareable("its allocation is not device memory");
  CUdeviceptr base = 0;
  size_t size = 0;
  if (d.mem_get_address_range(&base, &size, p) != CUDA_SUCCESS) return unshareable("cuMemGetAddressRange failed");
  if (p + bytes > base + size)
    return unshareable("the buffer spans several allocations mapped side by side (as expandable segments grow)");
  uint64_t block = 0;
  if (!block_id(base, &block)) return unshareable("the driver gives no id of the allocation");
  FdBroker* broker = nullptr;
  if (process_fd_broker(&broker) != Result::Success) return unshareable("this process's fd broker did not start");
  out->broker = broker->address();
  out->device = static_cast<uint64_t>(prop.location.id);
  out->base = base;
  out->size = size;
  out->block_id = block;
  broker->publish(out->fd_key());
  *offset = p - base;
  return CuMemExport::Exported;
}

bool republish_cumem(const CuMemAllocation& a) {
  FdBroker* broker = nullptr;
  if (process_fd_broker(&broker) != Result::Success) return false;
  broker->publish(a.fd_key());
  return true;
}

Result import_cumem(const CuMemAllocation& a, int device, unsigned char** base) {
  const cuda::DriverCalls& d = cuda::driver();
  if (!d.cumem_complete())
    return fail(Result::UnhandledCudaError, "cannot map a peer's cuMem allocation: the CUDA driver lacks the calls");
  int fd = -1;
  BRAID_TRY(fetch_fd(a.broker, a.fd_key(), fd_broker_wait_ms(), &fd));
  CUmemGenericAllocationHandle handle = 0;
  CUresult e = d.mem_import_from_shareable_handle(&handle, reinterpret_cast<void*>(static_cast<uintptr_t>(fd)), kFdHandle);
  close(fd);  // the imported handle holds the allocation now
  if (e != CUDA_SUCCESS)
    return fail(Result::UnhandledCudaError, "cuMemImportFromShareableHandle (process %llu's allocation): %s",
                static_cast<unsigned long long>(a.broker.pid), cuda::driver_error_string(e));
  const char* step = "cuMemGetAllocationPropertiesFromHandle";
  CUmemAllocationProp prop{};
  size_t granularity = 0;
  CUdeviceptr va = 0;
  bool reserved = false, mapped = false;
  e = d.mem_get_allocation_properties_from_handle(&prop, handle);
  if (e == CUDA_SUCCESS) {
    step = "cuMemGetAllocationGranularity";
    e = d.mem_get_allocation_granularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
  }
  if (e == CUDA_SUCCESS) {
    step = "cuMemAddressReserve";
    e = d.mem_address_reserve(&va, a.size, granularity, 0, 0);
    reserved = e == CUDA_SUCCESS;
  }
  if (e == CUDA_SUCCESS) {
    step = "cuMemMap";
    e = d.mem_map(va, a.size, 0, handle, 0);
    mapped = e == CUDA_SUCCESS;
  }
  if (e == CUDA_SUCCESS) {
    step = "cuMemSetAccess";
    CUmemAccessDesc access{};
    access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access.location.id = device;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    e = d.mem_set_access(va, a.size, &access, 1);
  }
  // Mapped, the memory stays until unmapped; a failed import lets it go here.
  d.mem_release(handle);
  if (e != CUDA_SUCCESS) {
    if (mapped) d.mem_unmap(va, a.size);
    if (reserved) d.mem_address_free(va, a.size);
    return fail(Result::UnhandledCudaError, "%s (process %llu's allocation of %llu bytes, for GPU %d): %s", step,
                static_cast<unsigned long long>(a.broker.pid), static_cast<unsigned long long>(a.size), device,
                cuda::driver_error_string(e));
  }
  BRAID_INFO(Alloc, "mapped process %llu's cuMem allocation of %llu bytes for GPU %d",
             static_cast<unsigned long long>(a.broker.pid), static_cast<unsigned long long>(a.size), device);
  *base = reinterpret_cast<unsigned char*>(va);
  return Result::Success;
}

void unmap_cumem(unsigned char* base, uint64_t size) {
  const cuda::DriverCalls& d = cuda::driver();
  const auto va = reinterpret_cast<CUdeviceptr>(base);
  if (d.mem_unmap(va, size) != CUDA_SUCCESS || d.mem_address_free(va, size) != CUDA_SUCCESS)
    BRAID_WARN(Alloc, "unmapping a peer's cuMem allocation of %llu bytes failed", static_cast<unsigned long long>(size));
}

}  // namespace braid::peer
