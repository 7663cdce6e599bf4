// Which calls of braid's NVLink path are replayed from CUDA graphs (peer_path.h). Queued one
// operation at a time a call costs the calling thread 7-50 us (its two meeting points, the pulled
// pieces of an AllReduce and their reductions, an AllGather's forked copies), where one graph
// launch costs a few. A call's operations (its body) are captured the second time the same body
// comes (the same buffers, peers' mappings, sizes and call bit: its key) and launched from the
// graph from then on; a body seen once is queued as it is, since capturing costs more than
// queueing. Where graphs stop paying (buffers that change every call, more bodies than fit), no
// more are made. CUDA-free: the graphs are handles the caller makes and destroys, so the policy
// is tested on CPU (tests/peer).
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <utility>
#include <vector>

namespace braid::peer {

class BodyGraphCache {
 public:
  using Key = std::vector<uint64_t>;
  using Handle = void*;

  // At most `capacity` graphs are kept and `remembered` keys seen without one, the least recently
  // used going first. A graph of a call's body holds about 320 KiB of GPU memory, which CUDA keeps
  // after the graph is destroyed (bench/graph_cost_probe.cu on an H200): 32 graphs, 10 MiB a
  // communicator at most.
  static constexpr size_t kDefaultCapacity = 32;
  explicit BodyGraphCache(size_t capacity = kDefaultCapacity, size_t remembered = 256)
      : capacity_(capacity), remembered_(remembered) {}

  // The graph kept for `key` (now the most recently used), or null.
  Handle find(const Key& key);
  // Whether the caller should make a graph for `key` now: it came before without one, and graphs
  // made so far paid (after kTrialBuilds, at least one launch from a kept graph per graph made).
  // Otherwise `key` is remembered for next time.
  bool seen_before(const Key& key);
  static constexpr uint64_t kTrialBuilds = 32;
  // Keeps `graph` for `key`. Returns the graph this pushed out, which the caller destroys, or null.
  Handle add(const Key& key, Handle graph);
  // Every graph kept, which the caller destroys; the cache is empty afterwards.
  std::vector<Handle> take_all();
  size_t graphs() const { return graphs_.size(); }
  uint64_t builds() const { return builds_; }      // graphs made
  uint64_t launches() const { return launches_; }  // bodies found in a kept graph

 private:
  size_t capacity_, remembered_;
  uint64_t builds_ = 0, launches_ = 0;
  std::list<std::pair<Key, Handle>> graphs_;  // most recently used first
  std::list<Key> seen_;                       // keys seen once, most recent first
};

}  // namespace braid::peer
