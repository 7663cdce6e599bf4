// TCP under the net plugin. Each connection opens `streams` TCP connections on every NIC pair
// (local NIC i to the peer's NIC i mod its NIC count) and a control connection on the direct
// NIC. Each NIC has `threads_per_nic` progress threads that move the bytes of its streams (non-
// blocking sockets, poll; the streams dealt over them in turn), paced by the NIC's token bucket
// when the NIC is emulated. Per message the sender picks NICs (nic_choice.h) from the NIC monitor
// and the receiver's credits, and cuts the message into pieces whose headers let the receiver
// place them with no copy.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "net/nic_choice.h"
#include "net/nic_monitor.h"
#include "net/transport.h"

namespace braid::net {

class SharedRelayPool;

struct TcpOptions {
  std::vector<Nic> nics;
  int streams_per_nic = 2;
  int threads_per_nic = 1;         // progress threads per NIC; its streams are dealt over them
  double rate_bytes_per_s = 0;     // per NIC; 0: unlimited
  Schedule schedule = Schedule::FuseLink;
  size_t stripe_min_bytes = 128 << 10;
  size_t min_piece_bytes = 64 << 10;
  int64_t idle_ns = 2000000;
  int setup_timeout_ms = 30000;
  std::shared_ptr<NicMonitor> monitor;  // null: a private one
  // Relays through a peer GPU's buffer (FuseLink's D1; relay_shm.h), off unless relay_bytes > 0.
  // On: the process offers a pool of relay_bytes (the cap) for each NIC it uses as a connection's
  // direct NIC (the first process of the host to do so owns it), and a piece it sends on an
  // indirect NIC whose owner offers a pool goes through a slot of that pool, or, when the pool
  // has no room, on the direct NIC from the caller's buffer.
  size_t relay_bytes = 0;
  size_t relay_slot_bytes = 1 << 20;
  std::string relay_name;  // the host's pools: relay_name + "-" + NIC index (a POSIX shm name)
};

class TcpTransport;
Result make_tcp_transport(TcpOptions options, std::unique_ptr<TcpTransport>* out);

class TcpTransport final : public Transport {
 public:
  ~TcpTransport() override;
  int nic_count() const override;
  const Nic& nic(int i) const override;
  Result listen(int nic, void* handle, ListenComm** out) override;
  Result connect(int nic, void* handle, Comm** out) override;
  Result accept(ListenComm* listener, Comm** out) override;
  Result isend(Comm* comm, const void* data, size_t bytes, Request** out) override;
  Result irecv(Comm* comm, void* data, size_t bytes, Request** out) override;
  Result test(Request* request, bool* done, size_t* bytes) override;
  Result close(Comm* comm) override;
  Result close_listen(ListenComm* listener) override;
  CommStats stats(Comm* comm) override;
  NicMonitor& monitor();
  // Relays: offers this process's pool for `nic` (listen and connect do it for their NIC); the
  // pool it offered for `nic`, or null (another process owns it, or relays are off).
  void offer_relay(int nic);
  SharedRelayPool* relay_pool(int nic);
  // Bytes this transport sent through relay slots, and relay pieces sent from the caller's
  // buffer on the direct NIC because the pool had no room.
  uint64_t relayed_bytes() const;
  uint64_t relay_fallback_bytes() const;
  // The hold the connection's damper puts on `nic` now (tests).
  int64_t damper_hold_ns(Comm* comm, int nic);

  struct State;

 private:
  explicit TcpTransport(std::unique_ptr<State> state);
  std::unique_ptr<State> s_;
  friend Result make_tcp_transport(TcpOptions, std::unique_ptr<TcpTransport>*);
};

}  // namespace braid::net
