// The C ABI of NCCL's net plugin interface, version 11: the newest that NCCL 2.28 loads (its
// src/plugin/net.cc tries ncclNetPlugin_v11 first, then v10 down to v6). Written for braid from
// the interface's documented layout, so the plugin needs no NCCL header and builds without CUDA.
// Field order and types must match NCCL's exactly; net_abi_test checks sizes and offsets.
#pragma once

#include <cstddef>
#include <cstdint>

extern "C" {

// ncclResult_t's values (braid::Result has the same ones).
typedef int braid_nccl_result_t;

enum {
  kNcclLogNone = 0,
  kNcclLogVersion = 1,
  kNcclLogWarn = 2,
  kNcclLogInfo = 3,
  kNcclLogAbort = 4,
  kNcclLogTrace = 5,
};
enum : unsigned long { kNcclSubsysInit = 0x1, kNcclSubsysNet = 0x10 };

typedef void (*braid_nccl_logger_t)(int level, unsigned long flags, const char* file, int line,
                                    const char* fmt, ...);
typedef braid_nccl_result_t (*braid_nccl_profiler_cb_t)(void** event, int type, void* parent,
                                                       int64_t plugin_id, void* ext_data);

constexpr int kNcclNetHandleMaxSize = 128;
constexpr int kNcclPtrHost = 0x1;
constexpr int kNcclPtrCuda = 0x2;
constexpr int kNcclPtrDmabuf = 0x4;
constexpr int kNcclNetMaxDevsPerNic = 4;
constexpr int kNcclNetMaxRequests = 32;
constexpr size_t kNcclMaxNetSizeBytes = size_t(1) << 40;
constexpr size_t kNcclMaxCollNetSize = size_t(512) << 20;
constexpr int kNcclNetDeviceHost = 0;       // ncclNetDeviceType: no device offload
constexpr int kNcclNetDeviceInvalidVersion = 0;
constexpr int kNcclNetTrafficClassUndef = -1;

struct NcclNetDeviceHandleV11 {
  int net_device_type;
  int net_device_version;
  void* handle;
  size_t size;
  int needs_proxy_progress;
};

struct NcclNetVDevicePropsV11 {
  int ndevs;
  int devs[kNcclNetMaxDevsPerNic];
};

struct NcclNetCommConfigV11 {
  int traffic_class;
};

struct NcclNetPropertiesV11 {
  char* name;
  char* pci_path;
  uint64_t guid;
  int ptr_support;
  int reg_is_global;
  int force_flush;
  int speed;  // Mbps
  int port;
  float latency;
  int max_comms;
  int max_recvs;
  int net_device_type;
  int net_device_version;
  NcclNetVDevicePropsV11 vprops;
  size_t max_p2p_bytes;
  size_t max_coll_bytes;
  int max_multi_request_size;
};

struct NcclNetCommAttrV11 {
  int32_t max_concurrent_peers;
  int32_t min_concurrent_peers;
  int32_t max_flows_per_peer;
  int32_t min_flows_per_peer;
};

struct NcclNetAttrV11 {
  NcclNetCommAttrV11 send_comm_attr;
  NcclNetCommAttrV11 recv_comm_attr;
  uint32_t op;
  uint32_t algo;
  uint32_t proto;
};

// ncclNet_v11_t: the table NCCL looks up as the symbol ncclNetPlugin_v11.
struct NcclNetV11 {
  const char* name;
  braid_nccl_result_t (*init)(void** ctx, uint64_t comm_id, NcclNetCommConfigV11* config,
                              braid_nccl_logger_t log, braid_nccl_profiler_cb_t profiler);
  braid_nccl_result_t (*devices)(int* ndev);
  braid_nccl_result_t (*get_properties)(int dev, NcclNetPropertiesV11* props);
  braid_nccl_result_t (*listen)(void* ctx, int dev, void* handle, void** listen_comm);
  braid_nccl_result_t (*connect)(void* ctx, int dev, void* handle, void** send_comm,
                                 NcclNetDeviceHandleV11** send_dev_comm);
  braid_nccl_result_t (*accept)(void* listen_comm, void** recv_comm,
                                NcclNetDeviceHandleV11** recv_dev_comm);
  braid_nccl_result_t (*reg_mr)(void* comm, void* data, size_t size, int type, void** mhandle);
  braid_nccl_result_t (*reg_mr_dmabuf)(void* comm, void* data, size_t size, int type,
                                       uint64_t offset, int fd, void** mhandle);
  braid_nccl_result_t (*dereg_mr)(void* comm, void* mhandle);
  braid_nccl_result_t (*isend)(void* send_comm, void* data, size_t size, int tag, void* mhandle,
                               void* phandle, void** request);
  braid_nccl_result_t (*irecv)(void* recv_comm, int n, void** data, size_t* sizes, int* tags,
                               void** mhandles, void** phandles, void** request);
  braid_nccl_result_t (*iflush)(void* recv_comm, int n, void** data, int* sizes, void** mhandles,
                                void** request);
  braid_nccl_result_t (*test)(void* request, int* done, int* sizes);
  braid_nccl_result_t (*close_send)(void* send_comm);
  braid_nccl_result_t (*close_recv)(void* recv_comm);
  braid_nccl_result_t (*close_listen)(void* listen_comm);
  braid_nccl_result_t (*get_device_mr)(void* comm, void* mhandle, void** dptr_mhandle);
  braid_nccl_result_t (*irecv_consumed)(void* recv_comm, int n, void* request);
  braid_nccl_result_t (*make_vdevice)(int* d, NcclNetVDevicePropsV11* props);
  braid_nccl_result_t (*finalize)(void* ctx);
  braid_nccl_result_t (*set_net_attr)(void* ctx, NcclNetAttrV11* attr);
};

}  // extern "C"

// The x86-64 layout of NCCL 2.28's v11 structs, worked out from its header field by field: a field
// added, dropped or retyped here moves one of these.
static_assert(sizeof(NcclNetPropertiesV11) == 112);
static_assert(offsetof(NcclNetPropertiesV11, vprops) == 64);
static_assert(offsetof(NcclNetPropertiesV11, max_p2p_bytes) == 88);
static_assert(offsetof(NcclNetPropertiesV11, max_multi_request_size) == 104);
static_assert(sizeof(NcclNetDeviceHandleV11) == 32);
static_assert(sizeof(NcclNetV11) == 22 * sizeof(void*));  // name and 21 functions
static_assert(offsetof(NcclNetV11, test) == 13 * sizeof(void*));
static_assert(offsetof(NcclNetV11, finalize) == 20 * sizeof(void*));
