#include "peer/body_graphs.h"

#include <algorithm>

namespace braid::peer {

BodyGraphCache::Handle BodyGraphCache::find(const Key& key) {
  const auto it = std::find_if(graphs_.begin(), graphs_.end(), [&](const auto& g) { return g.first == key; });
  if (it == graphs_.end()) return nullptr;
  graphs_.splice(graphs_.begin(), graphs_, it);
  ++launches_;
  return it->second;
}

bool BodyGraphCache::seen_before(const Key& key) {
  const auto it = std::find(seen_.begin(), seen_.end(), key);
  const bool paying = builds_ < kTrialBuilds || launches_ >= builds_;
  if (it != seen_.end() && paying) {
    seen_.erase(it);
    return true;
  }
  if (it != seen_.end()) return false;
  if (remembered_ == 0) return false;
  if (seen_.size() >= remembered_) seen_.pop_back();
  seen_.push_front(key);
  return false;
}

BodyGraphCache::Handle BodyGraphCache::add(const Key& key, Handle graph) {
  ++builds_;
  graphs_.emplace_front(key, graph);
  if (graphs_.size() <= capacity_) return nullptr;
  const Handle out = graphs_.back().second;
  graphs_.pop_back();
  return out;
}

std::vector<BodyGraphCache::Handle> BodyGraphCache::take_all() {
  std::vector<Handle> out;
  for (const auto& g : graphs_) out.push_back(g.second);
  graphs_.clear();
  seen_.clear();
  return out;
}

}  // namespace braid::peer
