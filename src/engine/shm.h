// POSIX shared memory segments of one communicator, named from its random 128-bit id
// ("/braid-<32 hex>-<what>"), created mode 0600 by one rank and opened by the others.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "common/result.h"

namespace braid::engine {

// A mapped segment. Unmaps on destruction; unlinking is explicit (as soon as every rank
// attached), so a crash after that leaves nothing in /dev/shm. Within one process a segment is
// mapped once and shared (ranks as threads see the same addresses, so their atomics are the same
// objects - which ThreadSanitizer needs to see the synchronisation).
class SharedSegment {
 public:
  SharedSegment() = default;
  ~SharedSegment();
  SharedSegment(SharedSegment&& other) noexcept;
  SharedSegment& operator=(SharedSegment&& other) noexcept;
  SharedSegment(const SharedSegment&) = delete;
  SharedSegment& operator=(const SharedSegment&) = delete;

  // Creates `name` (O_CREAT|O_EXCL, 0600) of `bytes` bytes, zero-filled, and maps it. Its first
  // `reserve` bytes (all by default) are allocated for real (posix_fallocate), so touching them can
  // never raise SIGBUS when /dev/shm is full; allocate() reserves the rest. With `exists` given, a
  // name that exists already is no failure to log: *exists says so (the caller opens it instead)
  // and the result is SystemError.
  static Result create(const std::string& name, size_t bytes, SharedSegment* out, bool* exists = nullptr,
                       size_t reserve = SIZE_MAX);
  // Allocates bytes [offset, offset + bytes) of a segment this process created; a /dev/shm too
  // small fails with SystemError naming its size and free space.
  Result allocate(size_t offset, size_t bytes);
  // Whether this thread's last allocation (create or allocate) failed for want of room in /dev/shm
  // (ENOSPC, or ENOMEM where a memory limit holds it), rather than for another reason.
  static bool out_of_space();
  // Opens an existing segment, retrying until it exists with `bytes` bytes or `timeout_s` passed.
  // `abort_word` (may be null) set ends the wait with RemoteError.
  static Result open(const std::string& name, size_t bytes, double timeout_s,
                     const std::atomic<uint64_t>* abort_word, SharedSegment* out);
  // Removes the name (the mapping stays valid). ENOENT is not an error.
  static void unlink(const std::string& name);

  // Binds the pages to NUMA node `node` when libnuma is present and the node exists; otherwise
  // does nothing (placement is an optimisation, never a requirement).
  void place_on_numa(int node);

  void* data() const { return mapping_ ? mapping_->data : nullptr; }
  size_t size() const { return mapping_ ? mapping_->size : 0; }
  const std::string& name() const { return name_; }

  struct Mapping {
    void* data = nullptr;
    size_t size = 0;
    int fd = -1;  // kept by the creator, for allocate()
    ~Mapping();
  };

 private:
  std::shared_ptr<Mapping> mapping_;
  std::string name_;
};

// The size and free space of the file system behind shm_open (/dev/shm); false where it cannot say.
struct ShmSpace {
  uint64_t size = 0;
  uint64_t free = 0;
};
bool shm_space(ShmSpace* out);
inline constexpr const char* kShmDir = "/dev/shm";

}  // namespace braid::engine
