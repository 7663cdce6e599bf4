// A buffer's allocation shared with peers in other processes, whichever way its memory allows:
// cuMem allocations with a POSIX fd handle type through the fd broker (cumem_share.h), other
// device memory (cudaMalloc) through legacy CUDA IPC. One record names either
// (allocation_record.h); the peers' mapping caches open and close them with the functions here.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/result.h"
#include "peer/allocation_record.h"
#include "peer/mapping_cache.h"

namespace braid::peer {

// Names the bytes [buffer, buffer + bytes) to peers in other processes: writes kAllocationWords
// words of `record` and the buffer's offset in its allocation. cuMem allocations are shared only
// with `fd_passing` (every peer's fd broker answered at set-up). False when no way shares it
// (not device memory, a cuMem allocation without a POSIX fd handle type, ...).
bool export_buffer(const void* buffer, size_t bytes, bool fd_passing, uint64_t* record, uint64_t* offset);
// Opens a peer's exported allocation in this process for the current device (the mapping
// cache's open hook) and closes it again (its close hook).
Result open_exported(const MappingCache::Key& record, unsigned char** base);
void close_exported(const MappingCache::Key& record, unsigned char* base);

}  // namespace braid::peer
