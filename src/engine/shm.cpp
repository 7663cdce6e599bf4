#include "engine/shm.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "common/log.h"

#if __has_include(<numa.h>)
#include <numa.h>
#define BRAID_HAVE_LIBNUMA 1
#endif

namespace braid::engine {

SharedSegment::~SharedSegment() { release(); }

SharedSegment::SharedSegment(SharedSegment&& other) noexcept { *this = std::move(other); }

SharedSegment& SharedSegment::operator=(SharedSegment&& other) noexcept {
  if (this != &other) {
    release();
    data_ = other.data_;
    size_ = other.size_;
    name_ = std::move(other.name_);
    other.data_ = nullptr;
    other.size_ = 0;
  }
  return *this;
}

void SharedSegment::release() {
  if (data_ != nullptr) munmap(data_, size_);
  data_ = nullptr;
  size_ = 0;
}

static Result map_fd(int fd, const std::string& name, size_t bytes, SharedSegment* out,
                     void** data) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED)
    return fail(Result::SystemError, "mmap of shared segment %s (%zu bytes) failed: %s",
                name.c_str(), bytes, strerror(errno));
  (void)out;
  *data = p;
  return Result::Success;
}

Result SharedSegment::create(const std::string& name, size_t bytes, SharedSegment* out) {
  int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0)
    return fail(Result::SystemError, "shm_open(%s, O_CREAT|O_EXCL) failed: %s", name.c_str(),
                strerror(errno));
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    int err = errno;
    close(fd);
    shm_unlink(name.c_str());
    return fail(Result::SystemError, "ftruncate of shared segment %s to %zu bytes failed: %s",
                name.c_str(), bytes, strerror(err));
  }
  void* data = nullptr;
  Result r = map_fd(fd, name, bytes, out, &data);
  close(fd);
  if (r != Result::Success) {
    shm_unlink(name.c_str());
    return r;
  }
  SharedSegment seg;
  seg.data_ = data;
  seg.size_ = bytes;
  seg.name_ = name;
  *out = std::move(seg);
  BRAID_INFO(Shm, "created %s (%zu bytes)", name.c_str(), bytes);
  return Result::Success;
}

Result SharedSegment::open(const std::string& name, size_t bytes, double timeout_s,
                           const volatile uint64_t* abort_word, SharedSegment* out) {
  const auto start = std::chrono::steady_clock::now();
  auto sleep_us = std::chrono::microseconds(50);
  for (;;) {
    int fd = shm_open(name.c_str(), O_RDWR, 0600);
    if (fd >= 0) {
      struct stat st {};
      if (fstat(fd, &st) == 0 && static_cast<size_t>(st.st_size) == bytes) {
        void* data = nullptr;
        Result r = map_fd(fd, name, bytes, out, &data);
        close(fd);
        if (r != Result::Success) return r;
        SharedSegment seg;
        seg.data_ = data;
        seg.size_ = bytes;
        seg.name_ = name;
        *out = std::move(seg);
        return Result::Success;
      }
      close(fd);  // created but not sized yet
    } else if (errno != ENOENT) {
      return fail(Result::SystemError, "shm_open(%s) failed: %s", name.c_str(), strerror(errno));
    }
    if (abort_word != nullptr && *abort_word != 0)
      return fail(Result::RemoteError, "aborted while waiting for shared segment %s",
                  name.c_str());
    const double waited =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (waited > timeout_s)
      return fail(Result::RemoteError,
                  "shared segment %s did not appear within %.1f s (did every rank start?)",
                  name.c_str(), timeout_s);
    std::this_thread::sleep_for(sleep_us);
    if (sleep_us < std::chrono::milliseconds(5)) sleep_us *= 2;
  }
}

void SharedSegment::unlink(const std::string& name) {
  if (shm_unlink(name.c_str()) != 0 && errno != ENOENT)
    BRAID_WARN(Shm, "shm_unlink(%s) failed: %s", name.c_str(), strerror(errno));
}

void SharedSegment::place_on_numa(int node) {
#ifdef BRAID_HAVE_LIBNUMA
  if (data_ == nullptr || node < 0) return;
  if (numa_available() < 0 || node > numa_max_node()) return;
  numa_tonode_memory(data_, size_, node);
#else
  (void)node;
#endif
}

}  // namespace braid::engine
