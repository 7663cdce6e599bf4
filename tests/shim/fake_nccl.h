// libfake_nccl.so: a stand-in for the real NCCL in CPU tests, loaded by libbraid.so through
// BRAID_NCCL_LIBRARY. It exports the `pnccl*` entry points braid forwards to; its communicators
// carry a rank, a size and a device and are never connected, and its collectives and send/recv
// only record that they were called. It checks no argument: the tests hold braid's answers
// against NCCL's source, and the fake shows whether a call reached NCCL at all.
#pragma once

#include <nccl.h>

#include <cstddef>

extern "C" {

// One collective or send/recv as the fake received it.
struct FakeNcclCall {
  char api[16];  // the entry point less "pnccl": "AllReduce", "Bcast", "Send", ...
  const void* sendbuff;
  const void* recvbuff;  // null for ncclSend; the buffer for ncclBcast, ncclRecv
  size_t count;
  int datatype;
  int op;    // ncclSum where the API takes none
  int root;  // the root, or the peer of a send/recv; 0 where the API takes none
  ncclComm_t comm;
  cudaStream_t stream;
};

size_t fake_nccl_call_count();
// The index-th recorded call (0 is the first).
FakeNcclCall fake_nccl_call(size_t index);

// Makes ncclCommGetAsyncError report `error` for `comm` from now on.
void fake_nccl_set_async_error(ncclComm_t comm, ncclResult_t error);

// The next entry point called throws: a std::runtime_error(what), or an int when `std_exception`
// is false (a C++ exception that is no std::exception).
void fake_nccl_throw_next(const char* what, bool std_exception);

}  // extern "C"
