#include "peer/mapping_cache.h"

#include "common/log.h"

namespace braid::peer {

Result MappingCache::get(const Key& key, uint64_t call, unsigned char** base) {
  auto it = mappings_.find(key);
  if (it == mappings_.end()) {
    if (mappings_.size() >= capacity_) {
      BRAID_TRY(hooks_.drain());
      size_t closed = 0;
      for (auto m = mappings_.begin(); m != mappings_.end();) {
        if (m->second.last_call + 2 >= call) {
          ++m;
          continue;
        }
        hooks_.close(m->first, m->second.base);
        m = mappings_.erase(m);
        ++closed;
      }
      BRAID_INFO(Alloc, "NVLink copy-engine path: closed %zu peer mappings not used lately (%zu stay open)", closed,
                 mappings_.size());
    }
    unsigned char* opened = nullptr;
    BRAID_TRY(hooks_.open(key, &opened));
    it = mappings_.emplace(key, Mapping{opened, 0}).first;
  }
  it->second.last_call = call;
  *base = it->second.base;
  return Result::Success;
}

void MappingCache::close_all() {
  for (auto& [key, mapping] : mappings_) hooks_.close(key, mapping.base);
  mappings_.clear();
}

}  // namespace braid::peer
