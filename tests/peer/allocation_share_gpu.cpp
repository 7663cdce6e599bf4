// Sharing buffers' allocations between processes on GPU 0 (label gpu): a cuMem allocation with a
// POSIX fd handle type and a cudaMalloc buffer, each exported by one fork()ed process through
// export_buffer and mapped by another through open_exported, which reads and writes it. Two
// processes on one GPU may map each other's cuMem allocations by fd, so one GPU is enough.
//
// The parent never touches CUDA (a fork()ed child cannot use its parent's CUDA): every step runs in
// the children, which report through their exit status and stderr.
#include <cuda.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <vector>

#include "common/result.h"
#include "cuda/driver_calls.h"
#include "peer/allocation_share.h"
#include "peer/cumem_share.h"
#include "gpu_test_support.h"

namespace braid::peer {
namespace {

constexpr size_t kAllocationBytes = size_t{8} << 20;
constexpr size_t kOffset = (size_t{1} << 20) + 256;  // the buffer inside its allocation
constexpr size_t kBufferBytes = size_t{4} << 20;

// What the exporter tells the importer, over a socket between the two.
struct Message {
  uint64_t record[kAllocationWords];
  uint64_t offset;
};

bool send_message(int fd, const Message& m) { return write(fd, &m, sizeof m) == static_cast<ssize_t>(sizeof m); }
bool receive_message(int fd, Message* m) {
  size_t got = 0;
  while (got < sizeof *m) {
    const ssize_t n = read(fd, reinterpret_cast<char*>(m) + got, sizeof *m - got);
    if (n <= 0) return false;
    got += static_cast<size_t>(n);
  }
  return true;
}
// A one-byte "go on" between the two processes.
bool signal_peer(int fd) { return write(fd, "k", 1) == 1; }
bool wait_for_peer(int fd) {
  char c;
  return read(fd, &c, 1) == 1;
}

std::vector<unsigned char> pattern(size_t bytes, unsigned seed) {
  std::vector<unsigned char> v(bytes);
  for (size_t i = 0; i < bytes; ++i) v[i] = static_cast<unsigned char>((i * 131 + seed * 7 + (i >> 12)) & 0xff);
  return v;
}

bool device_holds(const void* p, const std::vector<unsigned char>& expected) {
  std::vector<unsigned char> got(expected.size());
  return cudaMemcpy(got.data(), p, got.size(), cudaMemcpyDeviceToHost) == cudaSuccess && got == expected;
}

// The two roles in fork()ed processes joined by a socket.
void run_exporter_and_importer(const std::function<int(int)>& exporter, const std::function<int(int)>& importer) {
  int link[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, link), 0);
  run_in_processes({[&] {
                      close(link[1]);
                      return exporter(link[0]);
                    },
                    [&] {
                      close(link[0]);
                      return importer(link[1]);
                    }},
                   [&] {
                     // Only the two processes hold the link: an importer sees its exporter exit.
                     close(link[0]);
                     close(link[1]);
                   });
}

// The importer's half of a round trip: maps the buffer, checks the exporter's bytes, writes its
// own, unmaps, and tells the exporter.
int import_read_write(int link, unsigned seed, AllocationKind kind) {
  Message m{};
  CHECK(receive_message(link, &m));
  MappingCache::Key key;
  std::copy(std::begin(m.record), std::end(m.record), key.begin());
  CHECK(allocation_kind(key) == kind);
  unsigned char* base = nullptr;
  CHECK(open_exported(key, &base) == Result::Success);
  unsigned char* buffer = base + m.offset;
  CHECK(device_holds(buffer, pattern(kBufferBytes, seed)));
  const std::vector<unsigned char> reply = pattern(kBufferBytes, seed + 1);
  CHECK(cudaMemcpy(buffer, reply.data(), reply.size(), cudaMemcpyHostToDevice) == cudaSuccess);
  CHECK(cudaDeviceSynchronize() == cudaSuccess);
  close_exported(key, base);
  CHECK(cudaGetLastError() == cudaSuccess);
  CHECK(signal_peer(link));
  return 0;
}

// The exporter's half: fills the buffer, exports it, and checks the importer's bytes once told.
int export_and_check(int link, unsigned char* buffer, unsigned seed, AllocationKind kind) {
  const std::vector<unsigned char> mine = pattern(kBufferBytes, seed);
  CHECK(cudaMemcpy(buffer, mine.data(), mine.size(), cudaMemcpyHostToDevice) == cudaSuccess);
  Message m{};
  CHECK(export_buffer(buffer, kBufferBytes, true, m.record, &m.offset));
  CHECK(static_cast<AllocationKind>(m.record[0]) == kind);
  CHECK(m.offset == kOffset);
  CHECK(send_message(link, m));
  CHECK(wait_for_peer(link));
  CHECK(device_holds(buffer, pattern(kBufferBytes, seed + 1)));
  return 0;
}

TEST(AllocationShareGpu, ACuMemAllocationIsReadAndWrittenByAnotherProcess) {
  run_exporter_and_importer(
      [](int link) {
        CuMemBuffer b;
        CHECK(b.allocate(kAllocationBytes, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
        CHECK(export_and_check(link, b.at(kOffset), 11, AllocationKind::CuMemFd) == 0);
        b.free();
        return 0;
      },
      [](int link) { return import_read_write(link, 11, AllocationKind::CuMemFd); });
}

TEST(AllocationShareGpu, ACudaMallocBufferGoesThroughTheSameCalls) {
  run_exporter_and_importer(
      [](int link) {
        void* p = nullptr;
        CHECK(cudaMalloc(&p, kAllocationBytes) == cudaSuccess);
        CHECK(export_and_check(link, static_cast<unsigned char*>(p) + kOffset, 23, AllocationKind::CudaIpc) == 0);
        CHECK(cudaFree(p) == cudaSuccess);
        return 0;
      },
      [](int link) { return import_read_write(link, 23, AllocationKind::CudaIpc); });
}

// A record of a freed allocation is refused by its exporter's broker, even where a new allocation
// took its address; the new one has a record of its own (so a peer's cached mapping is never
// taken for it) and maps.
TEST(AllocationShareGpu, AFreedAllocationIsRefusedAndItsSuccessorHasANewRecord) {
  run_exporter_and_importer(
      [](int link) {
        CuMemBuffer first;
        CHECK(first.allocate(kAllocationBytes, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
        Message old_one{}, new_one{};
        CHECK(export_buffer(first.at(kOffset), kBufferBytes, true, old_one.record, &old_one.offset));
        first.free();
        CuMemBuffer second;
        CHECK(second.allocate(kAllocationBytes, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
        const std::vector<unsigned char> bytes = pattern(kBufferBytes, 31);
        CHECK(cudaMemcpy(second.at(kOffset), bytes.data(), bytes.size(), cudaMemcpyHostToDevice) == cudaSuccess);
        CHECK(export_buffer(second.at(kOffset), kBufferBytes, true, new_one.record, &new_one.offset));
        CHECK(!std::equal(std::begin(old_one.record), std::end(old_one.record), std::begin(new_one.record)));
        CuMemAllocation was, now;
        CHECK(read_cumem_record(old_one.record, &was) && read_cumem_record(new_one.record, &now));
        std::fprintf(stderr, "exporter: the new allocation %s the freed one's address (block ids %llu, %llu)\n",
                     now.base == was.base ? "took" : "did not take", static_cast<unsigned long long>(was.block_id),
                     static_cast<unsigned long long>(now.block_id));
        CHECK(send_message(link, old_one));
        CHECK(send_message(link, new_one));
        CHECK(wait_for_peer(link));
        CHECK(device_holds(second.at(kOffset), pattern(kBufferBytes, 32)));
        second.free();
        return 0;
      },
      [](int link) {
        Message m{};
        CHECK(receive_message(link, &m));
        MappingCache::Key stale;
        std::copy(std::begin(m.record), std::end(m.record), stale.begin());
        unsigned char* base = nullptr;
        CHECK(open_exported(stale, &base) == Result::InvalidUsage);
        return import_read_write(link, 31, AllocationKind::CuMemFd);
      });
}

// What cannot be exported by fd is unshareable: a cuMem allocation made without the POSIX fd
// handle type, a range that runs past its allocation's end, host memory. Without fd passing (a
// peer's broker was not reached) a cuMem buffer is unshareable too.
TEST(AllocationShareGpu, WhatCannotBeExportedIsUnshareable) {
  run_exporter_and_importer(
      [](int) {
        Message m{};
        CuMemBuffer no_fd;
        CHECK(no_fd.allocate(kAllocationBytes, CU_MEM_HANDLE_TYPE_NONE));
        CHECK(!export_buffer(no_fd.at(kOffset), kBufferBytes, true, m.record, &m.offset));
        no_fd.free();
        CuMemBuffer b;
        CHECK(b.allocate(kAllocationBytes, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
        CHECK(!export_buffer(b.at(kOffset), b.size - kOffset + 1, true, m.record, &m.offset));
        CHECK(export_buffer(b.at(kOffset), b.size - kOffset, true, m.record, &m.offset));
        CHECK(!export_buffer(b.at(kOffset), kBufferBytes, false, m.record, &m.offset));
        b.free();
        std::vector<unsigned char> host(kBufferBytes);
        CHECK(!export_buffer(host.data(), host.size(), true, m.record, &m.offset));
        CHECK(cudaGetLastError() == cudaSuccess);  // no sticky error left behind
        return 0;
      },
      [](int) { return 0; });
}

// An importer whose exporter has exited gets an error soon (its broker is gone), not a hang.
TEST(AllocationShareGpu, MappingTheAllocationOfAnExitedProcessFailsSoon) {
  run_exporter_and_importer(
      [](int link) {
        CuMemBuffer b;
        CHECK(b.allocate(kAllocationBytes, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
        Message m{};
        CHECK(export_buffer(b.at(kOffset), kBufferBytes, true, m.record, &m.offset));
        CHECK(send_message(link, m));
        return 0;  // exits at once: its broker goes with it
      },
      [](int link) {
        Message m{};
        CHECK(receive_message(link, &m));
        CHECK(!wait_for_peer(link));  // the exporter has exited: its end of the link closed
        MappingCache::Key key;
        std::copy(std::begin(m.record), std::end(m.record), key.begin());
        const auto start = std::chrono::steady_clock::now();
        unsigned char* base = nullptr;
        CHECK(open_exported(key, &base) == Result::RemoteError);
        CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
        return 0;
      });
}

}  // namespace
}  // namespace braid::peer
