#include "peer/allocation_share.h"

#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <mutex>
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

// An allocation's ids: BUFFER_ID and MEMORY_BLOCK_ID, which the process never gives another
// allocation, and its range. Zero ids where the driver does not say.
struct AllocationIds {
  uint64_t buffer_id = 0, block_id = 0;
  uint64_t base = 0, size = 0;
};
AllocationIds allocation_ids(const void* buffer) {
  const cuda::DriverCalls& d = cuda::driver();
  AllocationIds ids;
  if (d.pointer_get_attributes == nullptr) return ids;
  CUpointer_attribute what[4] = {CU_POINTER_ATTRIBUTE_BUFFER_ID, CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID,
                                 CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, CU_POINTER_ATTRIBUTE_RANGE_SIZE};
  unsigned long long buffer_id = 0, block_id = 0;
  CUdeviceptr base = 0;
  size_t size = 0;
  void* values[4] = {&buffer_id, &block_id, &base, &size};
  if (d.pointer_get_attributes(4, what, values, reinterpret_cast<CUdeviceptr>(buffer)) != CUDA_SUCCESS) {
    cudaGetLastError();
    return {};
  }
  return {buffer_id, block_id, base, size};
}

// What an allocation exported before gives again. Exporting costs the calling thread 2-5 us a
// buffer (several driver calls), every split call, where an application reuses its buffers. Keyed
// by the allocation's ids, so a freed allocation's entry is never matched again; bounded, the
// oldest entry going first.
class ExportCache {
 public:
  struct Entry {
    AllocationIds ids;
    bool cumem = false;  // shared by fd (its key is published to the fd broker again on each use)
    AllocationRecord record{};
  };
  bool find(const AllocationIds& ids, bool fd_passing, Entry* out) {
    std::lock_guard lock(mutex_);
    for (const Entry& e : entries_) {
      if (e.ids.buffer_id != ids.buffer_id || e.ids.block_id != ids.block_id || e.ids.base != ids.base ||
          e.ids.size != ids.size || (e.cumem && !fd_passing))
        continue;
      *out = e;
      return true;
    }
    return false;
  }
  void add(const Entry& entry) {
    std::lock_guard lock(mutex_);
    if (entries_.size() >= kCapacity) entries_.pop_front();
    entries_.push_back(entry);
  }

 private:
  static constexpr size_t kCapacity = 64;
  std::mutex mutex_;
  std::deque<Entry> entries_;
};
ExportCache& export_cache() {
  static ExportCache* cache = new ExportCache();  // never destroyed: calls may come during exit
  return *cache;
}

bool export_uncached(const void* buffer, size_t bytes, bool fd_passing, uint64_t* record, uint64_t* offset,
                     bool* cumem) {
  *cumem = false;
  if (fd_passing) {
    CuMemAllocation a;
    switch (export_cumem(buffer, bytes, &a, offset)) {
      case CuMemExport::Exported:
        write_cumem_record(a, record_words(record));
        *cumem = true;
        return true;
      case CuMemExport::Unshareable:
        return false;
      case CuMemExport::NotCuMem:
        break;
    }
  }
  return export_cuda_ipc(buffer, bytes, record, offset);
}

}  // namespace

bool export_buffer(const void* buffer, size_t bytes, bool fd_passing, uint64_t* record, uint64_t* offset) {
  if (buffer == nullptr) return false;
  const auto p = reinterpret_cast<uint64_t>(buffer);
  const AllocationIds ids = allocation_ids(buffer);
  const bool cacheable = ids.buffer_id != 0 && ids.size != 0 && p >= ids.base;
  ExportCache::Entry hit;
  if (cacheable && export_cache().find(ids, fd_passing, &hit)) {
    // The record names the whole allocation; the buffer must lie in it.
    CuMemAllocation a;
    const bool is_cumem = read_cumem_record(hit.record, &a);
    const uint64_t base = is_cumem ? a.base : ids.base, size = is_cumem ? a.size : ids.size;
    if (p >= base && p + bytes <= base + size) {
      if (is_cumem && !republish_cumem(a)) return false;
      std::copy(hit.record.begin(), hit.record.end(), record);
      *offset = p - base;
      return true;
    }
  }
  bool cumem = false;
  if (!export_uncached(buffer, bytes, fd_passing, record, offset, &cumem)) return false;
  if (cacheable) {
    ExportCache::Entry entry;
    entry.ids = ids;
    entry.cumem = cumem;
    std::copy(record, record + kAllocationWords, entry.record.begin());
    export_cache().add(entry);
  }
  return true;
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
