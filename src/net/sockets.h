// Small TCP helpers for the transport: sockets bound to a NIC's address, connects that do not
// block, and bounded blocking reads and writes for the few bytes of connection set-up.
#pragma once

#include <sys/socket.h>

#include <cstddef>

#include "common/result.h"
#include "net/nics.h"
#include "net/wire.h"

namespace braid::net {

// A listening socket on `nic`'s address, any port; `where` gets the address and port.
Result listen_on(const Nic& nic, int* fd, WireAddress* where);
// Starts a non-blocking connect from `local`'s address to `to`.
Result start_connect(const Nic& local, const WireAddress& to, int* fd);
// 1: connected, 0: not yet, negative: -errno of the failure.
int connect_status(int fd);
// Waits (at most timeout_ms) until the non-blocking connect on `fd` is done.
Result finish_connect(int fd, int timeout_ms);
// Reads or writes exactly n bytes, waiting at most timeout_ms in all.
Result read_exact(int fd, void* buf, size_t n, int timeout_ms);
Result write_exact(int fd, const void* buf, size_t n, int timeout_ms);
// Non-blocking partial read: bytes read (0 when none ready); -1 at end of stream; -2 on error.
long read_some(int fd, void* buf, size_t n);
void set_stream_options(int fd);  // non-blocking, TCP_NODELAY, keepalive
bool wire_address_valid(const WireAddress& a);

}  // namespace braid::net
