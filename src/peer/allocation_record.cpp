#include "peer/allocation_record.h"

#include <algorithm>

namespace braid::peer {

namespace {

// A cuMem record's words after the kind; the rest stay zero.
enum CuMemWord : int { kPid = 1, kNonce, kDevice, kBase, kSize, kBlockId };
static_assert(kBlockId < kAllocationWords);

}  // namespace

AllocationKind allocation_kind(std::span<const uint64_t, kAllocationWords> record) {
  const uint64_t kind = record[0];
  if (kind == static_cast<uint64_t>(AllocationKind::CudaIpc)) return AllocationKind::CudaIpc;
  if (kind == static_cast<uint64_t>(AllocationKind::CuMemFd)) return AllocationKind::CuMemFd;
  return AllocationKind::None;
}

void write_cuda_ipc_record(std::span<const uint64_t, kIpcHandleWords> handle,
                           std::span<uint64_t, kAllocationWords> record) {
  record[0] = static_cast<uint64_t>(AllocationKind::CudaIpc);
  std::copy(handle.begin(), handle.end(), record.begin() + 1);
}

void write_cumem_record(const CuMemAllocation& a, std::span<uint64_t, kAllocationWords> record) {
  std::fill(record.begin(), record.end(), 0);
  record[0] = static_cast<uint64_t>(AllocationKind::CuMemFd);
  record[kPid] = a.broker.pid;
  record[kNonce] = a.broker.nonce;
  record[kDevice] = a.device;
  record[kBase] = a.base;
  record[kSize] = a.size;
  record[kBlockId] = a.block_id;
}

std::span<const uint64_t, kIpcHandleWords> cuda_ipc_handle(std::span<const uint64_t, kAllocationWords> record) {
  return record.subspan<1, kIpcHandleWords>();
}

bool read_cumem_record(std::span<const uint64_t, kAllocationWords> record, CuMemAllocation* out) {
  if (allocation_kind(record) != AllocationKind::CuMemFd) return false;
  out->broker = {record[kPid], record[kNonce]};
  out->device = record[kDevice];
  out->base = record[kBase];
  out->size = record[kSize];
  out->block_id = record[kBlockId];
  return true;
}

}  // namespace braid::peer
