// The interface every transport under the net plugin implements (TCP now; ibverbs would be a
// second). It mirrors the plugin API's life cycle: listen, connect and accept that never wait
// for the peer, messages posted and tested, and closes. Connections are opaque pointers.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/result.h"
#include "net/nics.h"

namespace braid::net {

struct ListenComm;
struct Comm;       // a send or receive connection
struct Request;

struct CommStats {
  uint64_t bytes_on_nic[16] = {};  // bytes this connection put on each local NIC
  uint32_t last_mask = 0;           // NICs of the latest message
  uint32_t mask_changes = 0;        // how often the NIC set changed between messages
  int64_t last_change_ns = 0;       // when it last changed (CLOCK_MONOTONIC)
  uint64_t relayed_bytes = 0;       // sent from a peer GPU's relay slot (D1)
  uint64_t relay_fallback_bytes = 0;  // meant for a relay, sent on the direct NIC: no room
  int retired_streams = 0;          // streams (data and control) that ended: closed, broken or failed
};

class Transport {
 public:
  virtual ~Transport() = default;
  virtual int nic_count() const = 0;
  virtual const Nic& nic(int i) const = 0;
  // Writes a handle of at most 128 bytes that a peer's connect() takes.
  virtual Result listen(int nic, void* handle, ListenComm** out) = 0;
  // *out stays null until the connection is ready: call again with the same handle memory.
  virtual Result connect(int nic, void* handle, Comm** out) = 0;
  virtual Result accept(ListenComm* listener, Comm** out) = 0;
  // *out is null when the connection has too many messages in flight: post it again later.
  virtual Result isend(Comm* comm, const void* data, size_t bytes, Request** out) = 0;
  virtual Result irecv(Comm* comm, void* data, size_t bytes, Request** out) = 0;
  // *bytes: the bytes sent or received (a receive may get fewer than it posted).
  virtual Result test(Request* request, bool* done, size_t* bytes) = 0;
  virtual Result close(Comm* comm) = 0;
  virtual Result close_listen(ListenComm* listener) = 0;
  virtual CommStats stats(Comm* comm) = 0;
};

}  // namespace braid::net
