// Sharing CUDA virtual-memory (cuMem) allocations with peer processes, which legacy CUDA IPC
// cannot do: ncclMemAlloc's buffers (nccl-tests 2.19+), PyTorch's expandable segments. An
// allocation made with CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR among its requested handle types
// is published to this process's fd broker (common/fd_broker.h); a peer asks the broker for its
// fd, imports it, and maps the whole allocation into its own address space. The exporter makes
// the fd only when a peer asks (the broker's thread calls cuMemExportToShareableHandle), since
// peers cache their mappings and ask once per allocation while buffers are published every call.
// All driver calls go through cuda::driver(): no binary links libcuda.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/fd_broker.h"
#include "common/result.h"
#include "peer/allocation_record.h"

namespace braid::peer {

enum class CuMemExport {
  NotCuMem,     // not cuMem memory (CUDA IPC may share it)
  Exported,     // published; *out and *offset say where
  Unshareable,  // cuMem memory that cannot be shared (the log says why, once per reason)
};

// For the bytes [buffer, buffer + bytes) of a cuMem allocation: publishes the allocation to this
// process's fd broker and describes it, with the buffer's offset in it. Unshareable when the
// allocation has no POSIX fd handle type, the range runs past its end (allocations mapped side by
// side, as expandable segments grow), or the driver lacks what it takes.
CuMemExport export_cumem(const void* buffer, size_t bytes, CuMemAllocation* out, uint64_t* offset);

// Publishes an allocation export_cumem described before to this process's fd broker again (an
// export served from a cache): the broker forgets the oldest of many keys. False where the broker
// is not running.
bool republish_cumem(const CuMemAllocation& a);

// Maps a peer's published allocation into this process, readable and writable by `device`:
// fetches its fd from the peer's broker (within BRAID_TIMEOUT), imports it, reserves an address
// range, maps and grants access. The handle and the fd are released at once: the mapping alone
// keeps the memory, so unmap_cumem needs only the address and the size.
Result import_cumem(const CuMemAllocation& a, int device, unsigned char** base);
void unmap_cumem(unsigned char* base, uint64_t size);

// BRAID_TIMEOUT in milliseconds: the bound of every wait on a peer's fd broker.
int fd_broker_wait_ms();

// This process's fd broker, started at first use; it is never destroyed (its thread may be in a
// driver call when the process exits).
Result process_fd_broker(FdBroker** out);

}  // namespace braid::peer
