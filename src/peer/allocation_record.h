// How a buffer's allocation is named to peers in other processes, as words of the per-call
// exchange (and as the key of the peers' mapping caches): a kind, then that kind's words.
// - CUDA IPC (cudaMalloc memory): the 64-byte cudaIpcMemHandle_t, which names one allocation.
// - cuMem (CUDA virtual memory, e.g. ncclMemAlloc or PyTorch's expandable segments), exported as
//   a POSIX file descriptor: where to ask for the fd (the exporter's fd broker) and which
//   allocation (its device, base, size and block id; the block id differs for a new allocation
//   made at the same address, so a peer's cached mapping is never stale).
// CUDA-free, so the layout and the keys it makes are tested on CPU (tests/peer).
#pragma once

#include <array>
#include <cstdint>
#include <span>

#include "common/fd_broker.h"

namespace braid::peer {

enum class AllocationKind : uint64_t { None = 0, CudaIpc = 1, CuMemFd = 2 };

inline constexpr int kIpcHandleWords = 8;  // sizeof(cudaIpcMemHandle_t) / 8
inline constexpr int kAllocationWords = 1 + kIpcHandleWords;
using AllocationRecord = std::array<uint64_t, kAllocationWords>;

struct CuMemAllocation {
  FdBrokerAddress broker;
  uint64_t device = 0;  // the exporter's device ordinal, which its broker makes current to export
  uint64_t base = 0, size = 0;
  uint64_t block_id = 0;  // CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID, unique in the exporter's process
  // What an importer asks the exporter's broker for.
  FdKey fd_key() const { return {device, base, size, block_id}; }
};

AllocationKind allocation_kind(std::span<const uint64_t, kAllocationWords> record);
void write_cuda_ipc_record(std::span<const uint64_t, kIpcHandleWords> handle,
                           std::span<uint64_t, kAllocationWords> record);
void write_cumem_record(const CuMemAllocation& a, std::span<uint64_t, kAllocationWords> record);
// The handle words of a CUDA IPC record.
std::span<const uint64_t, kIpcHandleWords> cuda_ipc_handle(std::span<const uint64_t, kAllocationWords> record);
// False when `record` is not a cuMem record.
bool read_cumem_record(std::span<const uint64_t, kAllocationWords> record, CuMemAllocation* out);

}  // namespace braid::peer
