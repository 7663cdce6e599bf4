// What braid's net plugin puts on the wire: the listen handle NCCL carries between ranks, the
// set-up messages, the header before every piece of a message, and the receiver's credits.
#pragma once

#include <cstdint>

#include "net/abi.h"

namespace braid::net {

constexpr uint32_t kWireMagic = 0x4252444e;  // "BRDN"
constexpr uint16_t kWireVersion = 1;

struct WireAddress {
  uint8_t family;  // AF_INET or AF_INET6
  uint8_t reserved;
  uint16_t port;   // network order
  uint8_t addr[16];
};

// The handle listen() writes and connect() reads (NCCL copies it between ranks as bytes).
struct ListenHandle {
  uint32_t magic;
  uint16_t version;
  uint16_t nic;      // the listener's direct NIC
  uint64_t nonce;    // the listener's secret: connections that do not present it are refused
  WireAddress control;
};
static_assert(sizeof(ListenHandle) <= kNcclNetHandleMaxSize);

enum class WireKind : uint32_t { Hello = 1, Reply = 2, StreamHello = 3 };

struct Hello {  // sender -> receiver, first bytes on the control connection
  uint32_t magic;
  WireKind kind;
  uint64_t nonce;
  uint64_t connection;  // names this connection's data streams
  uint32_t nic_count;
  uint32_t streams_per_nic;
};

struct Reply {  // receiver -> sender: where its data listeners are (nic_count WireAddress follow)
  uint32_t magic;
  WireKind kind;
  uint32_t nic_count;
  uint32_t reserved;
};

struct StreamHello {  // sender -> receiver, first bytes on each data connection
  uint32_t magic;
  WireKind kind;
  uint64_t nonce;
  uint64_t connection;
  uint32_t nic;
  uint32_t index;
};

// Before each piece of a message on a data stream.
struct PieceHeader {
  uint32_t magic;
  uint32_t bytes;   // this piece
  uint64_t seq;     // the message's number on this connection (0, 1, ...)
  uint64_t total;   // the message's size
  uint64_t offset;  // this piece's place in it
};
static_assert(sizeof(PieceHeader) == 32);

// Receiver -> sender on the control connection whenever the receiver's view changes: bit i set
// when the receiver's NIC i is idle (FuseLink's credit carrying the receiver's NIC load).
struct Credit {
  uint32_t magic;
  uint32_t idle_mask;
};

}  // namespace braid::net
