#include "balance/split_table.h"

#include <bit>

namespace braid::balance {

int size_bucket(size_t bytes) { return bytes <= 1 ? 0 : std::bit_width(bytes) - 1; }

Result reduce_path_max(std::span<const double> rank_path_seconds, int num_ranks, int num_paths,
                       std::vector<double>* path_seconds) {
  if (num_ranks < 1 || num_paths < 1 ||
      rank_path_seconds.size() != static_cast<size_t>(num_ranks) * num_paths)
    return fail(Result::InvalidArgument,
                "balance: %zu times given for %d ranks x %d paths", rank_path_seconds.size(),
                num_ranks, num_paths);
  path_seconds->assign(static_cast<size_t>(num_paths), 0.0);
  for (int r = 0; r < num_ranks; ++r) {
    for (int p = 0; p < num_paths; ++p) {
      const double t = rank_path_seconds[static_cast<size_t>(r) * num_paths + p];
      if (!(t >= 0))
        return fail(Result::InvalidArgument, "balance: rank %d path %d time %g is not >= 0", r,
                    p, t);
      if (t > (*path_seconds)[p]) (*path_seconds)[p] = t;
    }
  }
  return Result::Success;
}

SplitTable::SplitTable(std::unique_ptr<Balancer> prototype, size_t split_min_bytes)
    : prototype_(std::move(prototype)), split_min_bytes_(split_min_bytes) {}

SplitTable::SplitTable(const SplitTable& other)
    : prototype_(other.prototype_->clone()), split_min_bytes_(other.split_min_bytes_) {
  for (const auto& [key, balancer] : other.entries_) entries_.emplace(key, balancer->clone());
}

Shares SplitTable::shares_for(Collective c, DataType t, size_t bytes) const {
  if (bytes < split_min_bytes_) return dedicated_only(num_paths());
  auto it = entries_.find(SplitKey{c, t, size_bucket(bytes)});
  return it == entries_.end() ? prototype_->shares() : it->second->shares();
}

Shares SplitTable::issue(Collective c, DataType t, size_t bytes) {
  if (bytes < split_min_bytes_) return dedicated_only(num_paths());
  Balancer& b = entry(SplitKey{c, t, size_bucket(bytes)});
  const Shares shares = b.shares();
  b.on_issue();
  return shares;
}

Balancer& SplitTable::entry(const SplitKey& key) {
  auto it = entries_.find(key);
  if (it == entries_.end()) it = entries_.emplace(key, prototype_->clone()).first;
  return *it->second;
}

Result SplitTable::update(Collective c, DataType t, size_t bytes,
                          std::span<const double> rank_path_seconds, int num_ranks) {
  std::vector<double> path_seconds;
  BRAID_TRY(reduce_path_max(rank_path_seconds, num_ranks, num_paths(), &path_seconds));
  if (bytes < split_min_bytes_) return Result::Success;  // never split, nothing to learn
  entry(SplitKey{c, t, size_bucket(bytes)}).observe(path_seconds);
  return Result::Success;
}

Result SplitTable::update_used(Collective c, DataType t, size_t bytes, const Shares& used,
                               std::span<const double> rank_path_seconds, int num_ranks) {
  std::vector<double> path_seconds;
  BRAID_TRY(reduce_path_max(rank_path_seconds, num_ranks, num_paths(), &path_seconds));
  if (bytes < split_min_bytes_) return Result::Success;
  entry(SplitKey{c, t, size_bucket(bytes)}).observe_used(used, path_seconds);
  return Result::Success;
}

void SplitTable::restore(const SplitKey& key, const Shares& shares) { entry(key).restore(shares); }

}  // namespace braid::balance
