// The peers' buffers a rank has mapped (CUDA IPC handles opened, cuMem allocations imported), kept
// across calls because opening one costs far more than a call. A key (allocation_record.h) names
// one allocation, so a cached mapping is never stale; but a mapping keeps the peer's freed
// allocation alive, so the cache is bounded: past its
// capacity, mappings the latest two calls did not use are closed, after `drain` (closing one under
// a copy or kernel still in flight would fault it). CUDA-free: the opening, closing and draining
// are the caller's, so the policy is tested on CPU (tests/peer).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <vector>

#include "common/result.h"
#include "peer/allocation_record.h"

namespace braid::peer {

// The mappings CUDA graphs captured calls on: they stay open while such a graph lives, since a
// replay reads them long after the call that mapped them. A graph lets go of its pins from a CUDA
// thread when it is destroyed, which may be after the path itself is gone: held by shared_ptr.
class MappingPins {
 public:
  using Key = AllocationRecord;
  void pin(const std::vector<Key>& keys);
  void unpin(const std::vector<Key>& keys);
  bool pinned(const Key& key) const;

 private:
  mutable std::mutex mutex_;
  std::map<Key, int> counts_;
};

class MappingCache {
 public:
  using Key = AllocationRecord;  // an exported allocation, as exchanged
  struct Hooks {
    std::function<Result(const Key&, unsigned char**)> open;
    std::function<void(const Key&, unsigned char*)> close;  // the key says how it was opened
    std::function<Result()> drain;  // the work queued so far that may read a mapping has finished
    // Whether a CUDA graph holds the mapping (MappingPins): then it is never closed but by
    // close_all. May be empty.
    std::function<bool(const Key&)> pinned;
  };

  MappingCache(size_t capacity, Hooks hooks) : capacity_(capacity), hooks_(std::move(hooks)) {}
  ~MappingCache() { close_all(); }
  MappingCache(const MappingCache&) = delete;
  MappingCache& operator=(const MappingCache&) = delete;

  // The base of `key`'s mapping for call `call` (calls are numbered upwards), opened if needed.
  Result get(const Key& key, uint64_t call, unsigned char** base);
  // The base of `key`'s mapping for call `call` if it is open; opens and closes nothing.
  bool find(const Key& key, uint64_t call, unsigned char** base);
  void close_all();
  // Closes, after the drain, every mapping call `call` has not used; returns how many.
  size_t close_unused_before(uint64_t call);
  size_t size() const { return mappings_.size(); }

 private:
  struct Mapping {
    unsigned char* base = nullptr;
    uint64_t last_call = 0;  // the latest call that used it
  };
  // Closes the mappings no call from `call` on has used (the caller drained first); how many.
  size_t close_last_used_before(uint64_t call);
  // Whether a mapping closes: not used since `call`, and no graph holds it.
  bool closable(const Key& key, const Mapping& mapping, uint64_t call) const {
    return mapping.last_call < call && !(hooks_.pinned && hooks_.pinned(key));
  }
  size_t capacity_;
  Hooks hooks_;
  std::map<Key, Mapping> mappings_;
};

}  // namespace braid::peer
