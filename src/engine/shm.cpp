#include "engine/shm.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

#include "common/log.h"

#if __has_include(<numa.h>)
#include <numa.h>
#define BRAID_HAVE_LIBNUMA 1
#endif

namespace braid::engine {

namespace {

// Segments this process has mapped, by name (weak: the last owner unmaps).
std::mutex& registry_mutex() {
  static std::mutex m;
  return m;
}
std::map<std::string, std::weak_ptr<SharedSegment::Mapping>>& registry() {
  static std::map<std::string, std::weak_ptr<SharedSegment::Mapping>> r;
  return r;
}

Result map_fd(int fd, const std::string& name, size_t bytes,
              std::shared_ptr<SharedSegment::Mapping>* out) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED)
    return fail(Result::SystemError, "mmap of shared segment %s (%zu bytes) failed: %s",
                name.c_str(), bytes, strerror(errno));
  auto m = std::make_shared<SharedSegment::Mapping>();
  m->data = p;
  m->size = bytes;
  for (auto it = registry().begin(); it != registry().end();)
    it = it->second.expired() ? registry().erase(it) : std::next(it);
  registry()[name] = m;
  *out = std::move(m);
  return Result::Success;
}

}  // namespace

SharedSegment::Mapping::~Mapping() {
  if (data != nullptr) munmap(data, size);
  if (fd >= 0) close(fd);
}

bool shm_space(ShmSpace* out) {
  struct statvfs vfs {};
  if (statvfs(kShmDir, &vfs) != 0) return false;
  out->size = static_cast<uint64_t>(vfs.f_blocks) * vfs.f_frsize;
  out->free = static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize;
  return true;
}

namespace {
thread_local bool t_out_of_space = false;
}  // namespace

bool SharedSegment::out_of_space() { return t_out_of_space; }

Result SharedSegment::allocate(size_t offset, size_t bytes) {
  t_out_of_space = false;
  if (mapping_ == nullptr || mapping_->fd < 0 || offset > mapping_->size)
    return fail(Result::InternalError, "shared segment %s: allocate without its creator's descriptor", name_.c_str());
  bytes = std::min(bytes, mapping_->size - offset);
  if (bytes == 0) return Result::Success;
  const int err = posix_fallocate(mapping_->fd, static_cast<off_t>(offset), static_cast<off_t>(bytes));
  if (err == 0) return Result::Success;
  t_out_of_space = err == ENOSPC || err == ENOMEM || err == EFBIG;
  ShmSpace space;
  const bool known = shm_space(&space);
  return fail(Result::SystemError, "could not allocate %zu bytes of shared memory for %s: %s (%s: %llu MiB, %llu MiB free)",
              bytes, name_.c_str(), strerror(err), kShmDir, known ? static_cast<unsigned long long>(space.size >> 20) : 0ull,
              known ? static_cast<unsigned long long>(space.free >> 20) : 0ull);
}

SharedSegment::~SharedSegment() = default;
SharedSegment::SharedSegment(SharedSegment&& other) noexcept = default;
SharedSegment& SharedSegment::operator=(SharedSegment&& other) noexcept = default;

Result SharedSegment::create(const std::string& name, size_t bytes, SharedSegment* out, bool* exists, size_t reserve) {
  std::lock_guard lock(registry_mutex());
  t_out_of_space = false;
  if (exists != nullptr) *exists = false;
  int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0 && errno == EEXIST && exists != nullptr) {
    *exists = true;
    return Result::SystemError;
  }
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
  SharedSegment seg;
  Result r = map_fd(fd, name, bytes, &seg.mapping_);
  if (r != Result::Success) {
    close(fd);
    shm_unlink(name.c_str());
    return r;
  }
  seg.mapping_->fd = fd;
  seg.name_ = name;
  r = seg.allocate(0, reserve);
  if (r != Result::Success) {
    shm_unlink(name.c_str());
    return r;
  }
  *out = std::move(seg);
  BRAID_INFO(Shm, "created %s (%zu bytes)", name.c_str(), bytes);
  return Result::Success;
}

Result SharedSegment::open(const std::string& name, size_t bytes, double timeout_s,
                           const std::atomic<uint64_t>* abort_word, SharedSegment* out) {
  const auto start = std::chrono::steady_clock::now();
  auto sleep_us = std::chrono::microseconds(50);
  for (;;) {
    {
      std::lock_guard lock(registry_mutex());
      auto it = registry().find(name);
      if (it != registry().end()) {
        if (auto m = it->second.lock(); m && m->size == bytes) {
          out->mapping_ = std::move(m);
          out->name_ = name;
          return Result::Success;
        }
      }
      int fd = shm_open(name.c_str(), O_RDWR, 0600);
      if (fd >= 0) {
        struct stat st {};
        if (fstat(fd, &st) == 0 && static_cast<size_t>(st.st_size) == bytes) {
          SharedSegment seg;
          Result r = map_fd(fd, name, bytes, &seg.mapping_);
          close(fd);
          if (r != Result::Success) return r;
          seg.name_ = name;
          *out = std::move(seg);
          return Result::Success;
        }
        close(fd);  // created but not sized yet
      } else if (errno != ENOENT) {
        return fail(Result::SystemError, "shm_open(%s) failed: %s", name.c_str(),
                    strerror(errno));
      }
    }
    if (abort_word != nullptr && abort_word->load() != 0)
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
  if (data() == nullptr || node < 0) return;
  if (numa_available() < 0 || node > numa_max_node()) return;
  numa_tonode_memory(data(), size(), node);
#else
  (void)node;
#endif
}

}  // namespace braid::engine
