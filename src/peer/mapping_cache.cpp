#include "peer/mapping_cache.h"

#include "common/log.h"

namespace braid::peer {

Result MappingCache::get(const Key& key, uint64_t call, unsigned char** base) {
  if (find(key, call, base)) return Result::Success;
  if (mappings_.size() >= capacity_) {
    BRAID_TRY(hooks_.drain());
    const size_t closed = close_last_used_before(call >= 2 ? call - 2 : 0);
    BRAID_INFO(Alloc, "NVLink copy-engine path: closed %zu peer mappings not used lately (%zu stay open)", closed,
               mappings_.size());
  }
  unsigned char* opened = nullptr;
  Result r = hooks_.open(key, &opened);
  // CUDA refuses to map an allocation again while a mapping held here still covers its memory:
  // a peer freed a buffer (or grew its scratch) and made a new one there. What this call has not
  // used is closed, after the drain, and the open is tried once more. A peer that is gone or
  // does not answer (a cuMem exporter's fd broker) is not asked twice: closing cannot help.
  if (r != Result::Success && r != Result::RemoteError && close_unused_before(call) > 0)
    r = hooks_.open(key, &opened);
  if (r != Result::Success) return fail(r, "a peer's buffer cannot be mapped: %s", last_error());
  mappings_.emplace(key, Mapping{opened, call});
  *base = opened;
  return Result::Success;
}

bool MappingCache::find(const Key& key, uint64_t call, unsigned char** base) {
  auto it = mappings_.find(key);
  if (it == mappings_.end()) return false;
  it->second.last_call = call;
  *base = it->second.base;
  return true;
}

size_t MappingCache::close_unused_before(uint64_t call) {
  bool any = false;
  for (const auto& [key, mapping] : mappings_)
    any = any || closable(key, mapping, call);
  if (!any || hooks_.drain() != Result::Success) return 0;
  const size_t closed = close_last_used_before(call);
  BRAID_INFO(Alloc, "peer mappings: an open failed; closed the %zu not used by this call and tried again", closed);
  return closed;
}

size_t MappingCache::close_last_used_before(uint64_t call) {
  size_t closed = 0;
  for (auto m = mappings_.begin(); m != mappings_.end();) {
    if (!closable(m->first, m->second, call)) {
      ++m;
      continue;
    }
    hooks_.close(m->first, m->second.base);
    m = mappings_.erase(m);
    ++closed;
  }
  return closed;
}

void MappingPins::pin(const std::vector<Key>& keys) {
  std::lock_guard lock(mutex_);
  for (const Key& key : keys) ++counts_[key];
}

void MappingPins::unpin(const std::vector<Key>& keys) {
  std::lock_guard lock(mutex_);
  for (const Key& key : keys) {
    auto it = counts_.find(key);
    if (it != counts_.end() && --it->second <= 0) counts_.erase(it);
  }
}

bool MappingPins::pinned(const Key& key) const {
  std::lock_guard lock(mutex_);
  return counts_.count(key) != 0;
}

void MappingCache::close_all() {
  for (auto& [key, mapping] : mappings_) hooks_.close(key, mapping.base);
  mappings_.clear();
}

}  // namespace braid::peer
