// The few CUDA driver calls braid needs (stream memory operations and their checks, and the
// virtual-memory calls that share cuMem allocations between processes), fetched
// through the runtime, which loads libcuda itself: linking libcuda would make every binary,
// libbraid.so included, fail to load on a machine without a GPU driver.
#pragma once

#include <cuda.h>

namespace braid::cuda {

// Each call as X(driver symbol, DriverCalls member): one list makes the members, their lookup
// and the checks that a group is there.
#define BRAID_STREAM_DRIVER_CALLS(X)               \
  X(cuDeviceGetAttribute, device_get_attribute)    \
  X(cuGetErrorString, get_error_string)            \
  X(cuStreamWriteValue64, stream_write_value64)    \
  X(cuStreamWaitValue64, stream_wait_value64)      \
  X(cuStreamBatchMemOp, stream_batch_mem_op)
// Finding a buffer's allocation, exporting a cuMem allocation (peer/cumem_share.h) and mapping
// it in a peer's process.
#define BRAID_CUMEM_DRIVER_CALLS(X)                                                \
  X(cuPointerGetAttribute, pointer_get_attribute)                                  \
  X(cuMemGetAddressRange, mem_get_address_range)                                   \
  X(cuMemRetainAllocationHandle, mem_retain_allocation_handle)                     \
  X(cuMemGetAllocationPropertiesFromHandle, mem_get_allocation_properties_from_handle) \
  X(cuMemExportToShareableHandle, mem_export_to_shareable_handle)                  \
  X(cuMemRelease, mem_release)                                                     \
  X(cuMemImportFromShareableHandle, mem_import_from_shareable_handle)              \
  X(cuMemGetAllocationGranularity, mem_get_allocation_granularity)                 \
  X(cuMemAddressReserve, mem_address_reserve)                                      \
  X(cuMemAddressFree, mem_address_free)                                            \
  X(cuMemMap, mem_map)                                                             \
  X(cuMemUnmap, mem_unmap)                                                         \
  X(cuMemSetAccess, mem_set_access)

// Questions about the process's driver state; optional.
#define BRAID_QUERY_DRIVER_CALLS(X)                  \
  X(cuModuleGetLoadingMode, module_get_loading_mode) \
  X(cuPointerGetAttributes, pointer_get_attributes)

struct DriverCalls {
#define BRAID_DRIVER_CALL_MEMBER(symbol, member) decltype(&symbol) member = nullptr;
#define BRAID_DRIVER_CALL_PRESENT(symbol, member) &&member != nullptr
  BRAID_STREAM_DRIVER_CALLS(BRAID_DRIVER_CALL_MEMBER)
  BRAID_CUMEM_DRIVER_CALLS(BRAID_DRIVER_CALL_MEMBER)
  BRAID_QUERY_DRIVER_CALLS(BRAID_DRIVER_CALL_MEMBER)
  bool complete() const { return true BRAID_STREAM_DRIVER_CALLS(BRAID_DRIVER_CALL_PRESENT); }
  bool cumem_complete() const { return true BRAID_CUMEM_DRIVER_CALLS(BRAID_DRIVER_CALL_PRESENT); }
#undef BRAID_DRIVER_CALL_MEMBER
#undef BRAID_DRIVER_CALL_PRESENT
};

// Looked up once per process (thread-safe); entries the driver lacks stay null.
const DriverCalls& driver();
// The driver's text for `e` (a fixed text where the driver gives none).
const char* driver_error_string(CUresult e);

}  // namespace braid::cuda
