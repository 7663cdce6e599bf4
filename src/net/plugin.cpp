// libnccl-net-braid.so: braid's net plugin for NCCL (NCCL_NET_PLUGIN=braid), ncclNet v11.
// The exported table forwards to the TCP transport; every error goes back as an ncclResult_t
// with its text logged through NCCL's logger. One transport serves every NCCL communicator of
// the process; it is built at the first init and torn down (threads joined) at the last finalize,
// before NCCL may unload the library.
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "common/settings.h"
#include "net/abi.h"
#include "net/net_log.h"
#include "net/nic_affinity.h"
#include "net/nics.h"
#include "net/tcp_transport.h"

namespace braid::net {
namespace {

struct MemRegion {
  void* data;
  size_t size;
  int type;
};

struct Plugin {
  std::mutex mu;
  int refs = 0;
  std::unique_ptr<TcpTransport> transport;
  std::vector<std::string> names;  // getProperties hands out char* into these
  std::vector<std::string> pci_paths;
};

Plugin& plugin() {
  static Plugin* p = new Plugin();  // never destroyed: NCCL may call in during exit
  return *p;
}

TcpTransport* transport() { return plugin().transport.get(); }

// braid's errors carry their text (last_error); NCCL hears it through its own logger.
int to_nccl(Result r) {
  if (r != Result::Success) BRAID_NET_WARN("%s", last_error());
  return int(r);
}

// Each emulated node (NCCL_HOSTID on the one-GPU rig) gets its own host-wide NIC board.
std::string board_name(const std::vector<Nic>& nics) {
  std::string key;
  if (const char* id = getenv("NCCL_HOSTID")) key = id;
  else {
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    key = host;
  }
  for (const Nic& n : nics) key += "," + n.name;
  char name[96];
  snprintf(name, sizeof name, "/braid-net-%u-%016zx", unsigned(getuid()), std::hash<std::string>{}(key));
  return name;
}

Result build_transport(Plugin& p) {
  settings_reload();
  const Settings& cfg = settings();
  TcpOptions o;
  BRAID_TRY(find_nics(cfg.net_nics, &o.nics));
  o.streams_per_nic = int(cfg.net_streams);
  o.threads_per_nic = int(cfg.net_threads);
  o.rate_bytes_per_s = cfg.net_rate_mbps * 1e6;
  o.schedule = parse_schedule(cfg.net_schedule.c_str());
  o.stripe_min_bytes = size_t(std::max<int64_t>(cfg.net_stripe_min_bytes, 0));
  o.idle_ns = std::max<int64_t>(cfg.net_idle_us, 0) * 1000;
  o.relay_bytes = size_t(std::max<int64_t>(cfg.net_relay_bytes, 0));
  o.relay_slot_bytes = size_t(std::max<int64_t>(cfg.net_relay_slot_bytes, 4096));
  o.relay_name = board_name(o.nics) + "-relay";  // one pool per NIC of this host, its owner GPU's
  std::unique_ptr<NicMonitor> shared;
  if (NicMonitor::open_shared(board_name(o.nics), int(o.nics.size()), o.idle_ns, &shared) == Result::Success)
    o.monitor = std::move(shared);
  else
    BRAID_NET_WARN("no host-wide NIC board (%s); this process sees only its own traffic", last_error());
  // A topology file says which GPU each NIC serves; emulated NICs (no PCI device of their own)
  // then report their GPU's PCI path, so NCCL pairs each GPU with its NIC.
  std::vector<NicAffinity> affinity;
  if (!cfg.topo_file.empty()) {
    topo::Topology t;
    if (topo::load_topology(cfg.topo_file, &t) == Result::Success) affinity = nic_affinity(t);
    else BRAID_NET_WARN("BRAID_TOPO_FILE %s: %s; NICs keep their own PCI paths", cfg.topo_file.c_str(), last_error());
  }
  std::string line;
  for (size_t i = 0; i < o.nics.size(); ++i) {
    p.names.push_back(o.nics[i].name);
    std::string pci = o.nics[i].pci_path;
    if (i < affinity.size()) {
      if (pci.empty() && !affinity[i].pci_bus_id.empty()) pci = "/sys/bus/pci/devices/" + affinity[i].pci_bus_id;
      BRAID_NET_INFO("NIC %zu (%s) is %s of the topology, GPU %d's", i, o.nics[i].name.c_str(),
                     affinity[i].nic_name.c_str(), affinity[i].gpu);
    }
    p.pci_paths.push_back(pci);
    line += " [" + std::to_string(i) + "]" + o.nics[i].name + ":" + o.nics[i].address;
  }
  BRAID_NET_INFO("Using%s; %d streams per NIC, schedule %s%s%s", line.c_str(), o.streams_per_nic,
                 cfg.net_schedule.c_str(), o.rate_bytes_per_s > 0 ? ", rate-limited" : "",
                 o.relay_bytes > 0 ? ", relays through peer GPUs' pools on" : "");
  return make_tcp_transport(std::move(o), &p.transport);
}

extern "C" {

int braid_net_init(void** ctx, uint64_t, NcclNetCommConfigV11*, braid_nccl_logger_t log, braid_nccl_profiler_cb_t) {
  if (log) set_nccl_logger(log);
  Plugin& p = plugin();
  std::lock_guard<std::mutex> lock(p.mu);
  if (p.refs == 0) {
    p.names.clear();
    p.pci_paths.clear();
    Result r = build_transport(p);
    if (r != Result::Success) return to_nccl(r);
  }
  ++p.refs;
  if (ctx) *ctx = &p;
  return 0;
}

int braid_net_finalize(void*) {
  Plugin& p = plugin();
  std::lock_guard<std::mutex> lock(p.mu);
  if (p.refs > 0 && --p.refs == 0) p.transport.reset();
  return 0;
}

int braid_net_devices(int* ndev) {
  if (!ndev) return to_nccl(Result::InvalidArgument);
  *ndev = transport() ? transport()->nic_count() : 0;
  return 0;
}

int braid_net_get_properties(int dev, NcclNetPropertiesV11* props) {
  TcpTransport* t = transport();
  if (!t || !props || dev < 0 || dev >= t->nic_count())
    return to_nccl(fail(Result::InvalidArgument, "getProperties: device %d of %d", dev, t ? t->nic_count() : 0));
  Plugin& p = plugin();
  const Nic& nic = t->nic(dev);
  std::memset(props, 0, sizeof *props);
  props->name = const_cast<char*>(p.names[size_t(dev)].c_str());
  props->pci_path = p.pci_paths[size_t(dev)].empty() ? nullptr : const_cast<char*>(p.pci_paths[size_t(dev)].c_str());
  props->guid = uint64_t(dev);
  props->ptr_support = kNcclPtrHost;  // no GPUDirect over TCP: NCCL stages through host memory
  props->reg_is_global = 0;
  props->force_flush = 0;
  double rate = settings().net_rate_mbps;
  props->speed = rate > 0 ? int(rate * 8) : (nic.speed_mbps > 0 ? nic.speed_mbps : 10000);
  props->port = 0;
  props->latency = 0;
  props->max_comms = 65536;
  props->max_recvs = 1;
  props->net_device_type = kNcclNetDeviceHost;
  props->net_device_version = kNcclNetDeviceInvalidVersion;
  props->vprops.ndevs = 1;
  props->vprops.devs[0] = dev;
  props->max_p2p_bytes = kNcclMaxNetSizeBytes;
  props->max_coll_bytes = kNcclMaxCollNetSize;
  props->max_multi_request_size = 1;
  return 0;
}

int braid_net_listen(void*, int dev, void* handle, void** listen_comm) {
  if (!transport() || !handle || !listen_comm) return to_nccl(fail(Result::InvalidArgument, "listen: null argument"));
  ListenComm* l = nullptr;
  Result r = transport()->listen(dev, handle, &l);
  *listen_comm = l;
  return to_nccl(r);
}

int braid_net_connect(void*, int dev, void* handle, void** send_comm, NcclNetDeviceHandleV11**) {
  if (!transport() || !handle || !send_comm) return to_nccl(fail(Result::InvalidArgument, "connect: null argument"));
  Comm* c = nullptr;
  Result r = transport()->connect(dev, handle, &c);
  *send_comm = c;
  return to_nccl(r);
}

int braid_net_accept(void* listen_comm, void** recv_comm, NcclNetDeviceHandleV11**) {
  if (!transport() || !listen_comm || !recv_comm) return to_nccl(fail(Result::InvalidArgument, "accept: null argument"));
  Comm* c = nullptr;
  Result r = transport()->accept(static_cast<ListenComm*>(listen_comm), &c);
  *recv_comm = c;
  return to_nccl(r);
}

int braid_net_reg_mr(void* comm, void* data, size_t size, int type, void** mhandle) {
  if (!comm || !mhandle) return to_nccl(fail(Result::InvalidArgument, "regMr: null argument"));
  if (type != kNcclPtrHost)
    return to_nccl(fail(Result::InternalError, "regMr: memory type %d; the TCP transport takes host memory only (NCCL_PTR_HOST)", type));
  // Sockets read and write any host address: nothing to pin, any alignment.
  *mhandle = new MemRegion{data, size, type};
  return 0;
}

int braid_net_dereg_mr(void*, void* mhandle) {
  delete static_cast<MemRegion*>(mhandle);
  return 0;
}

int braid_net_isend(void* send_comm, void* data, size_t size, int, void*, void*, void** request) {
  if (!send_comm || !request || (!data && size)) return to_nccl(fail(Result::InvalidArgument, "isend: null argument"));
  Request* req = nullptr;
  Result r = transport()->isend(static_cast<Comm*>(send_comm), data, size, &req);
  *request = req;
  return to_nccl(r);
}

int braid_net_irecv(void* recv_comm, int n, void** data, size_t* sizes, int*, void**, void**, void** request) {
  if (!recv_comm || !request || !data || !sizes) return to_nccl(fail(Result::InvalidArgument, "irecv: null argument"));
  if (n != 1) return to_nccl(fail(Result::InternalError, "irecv: %d grouped receives; this plugin advertises maxRecvs 1", n));
  Request* req = nullptr;
  Result r = transport()->irecv(static_cast<Comm*>(recv_comm), data[0], sizes[0], &req);
  *request = req;
  return to_nccl(r);
}

int braid_net_iflush(void*, int, void**, int*, void**, void** request) {
  // Host memory only: nothing to flush; a null request tells NCCL it is done.
  if (request) *request = nullptr;
  return 0;
}

int braid_net_test(void* request, int* done, int* sizes) {
  if (!request || !done) return to_nccl(fail(Result::InvalidArgument, "test: null argument"));
  bool complete = false;
  size_t bytes = 0;
  Result r = transport()->test(static_cast<Request*>(request), &complete, &bytes);
  *done = complete ? 1 : 0;
  if (complete && sizes) *sizes = bytes > size_t(INT_MAX) ? INT_MAX : int(bytes);
  return to_nccl(r);
}

int braid_net_close(void* comm) { return transport() ? to_nccl(transport()->close(static_cast<Comm*>(comm))) : 0; }

int braid_net_close_listen(void* listen_comm) {
  return transport() ? to_nccl(transport()->close_listen(static_cast<ListenComm*>(listen_comm))) : 0;
}

__attribute__((visibility("default"))) NcclNetV11 ncclNetPlugin_v11 = {
    "braid",
    braid_net_init,
    braid_net_devices,
    braid_net_get_properties,
    braid_net_listen,
    braid_net_connect,
    braid_net_accept,
    braid_net_reg_mr,
    nullptr,  // no DMA-BUF
    braid_net_dereg_mr,
    braid_net_isend,
    braid_net_irecv,
    braid_net_iflush,
    braid_net_test,
    braid_net_close,
    braid_net_close,
    braid_net_close_listen,
    nullptr,  // getDeviceMr: no device offload
    nullptr,  // irecvConsumed
    nullptr,  // makeVDevice: NCCL then uses the physical devices
    braid_net_finalize,
    nullptr,  // setNetAttr
};

}  // extern "C"
}  // namespace
}  // namespace braid::net
