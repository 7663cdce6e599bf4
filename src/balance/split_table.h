// One balancer state per (collective, dtype, size bucket). AGREEMENT: every rank must cut every
// collective at the same offsets, so the table's only input is the per-path max over ALL ranks'
// times (the caller all-gathers them; reduce_path_max is order-independent), and every update is
// a pure function of that input: identical inputs on all ranks give bitwise identical tables.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <span>
#include <vector>

#include "balance/balancer.h"
#include "common/types.h"

namespace braid::balance {

// floor(log2(bytes)), 0 for 0 and 1 byte: 256 MiB and 256 MiB + 1 share a bucket.
int size_bucket(size_t bytes);

struct SplitKey {
  Collective collective;
  DataType dtype;
  int bucket;
  auto operator<=>(const SplitKey&) const = default;
};

// A call's time on each path is the slowest rank's: reduces a row-major ranks x paths matrix of
// seconds to the per-path maximum. Max is exact and commutative, so any row order gives the same
// bits. Fails on a size mismatch, NaN or a negative time.
Result reduce_path_max(std::span<const double> rank_path_seconds, int num_ranks, int num_paths,
                       std::vector<double>* path_seconds);

class SplitTable {
 public:
  // `prototype` is cloned for each new key; collectives below split_min_bytes go to the
  // dedicated path alone and are never balanced.
  SplitTable(std::unique_ptr<Balancer> prototype, size_t split_min_bytes);
  SplitTable(const SplitTable& other);
  SplitTable& operator=(const SplitTable&) = delete;

  int num_paths() const { return prototype_->num_paths(); }
  size_t split_min_bytes() const { return split_min_bytes_; }
  std::string_view balancer_name() const { return prototype_->name(); }

  // The split the next call of this kind must use.
  Shares shares_for(Collective c, DataType t, size_t bytes) const;
  // The same, for a call about to be made with it (Balancer::on_issue). Every rank issues the
  // same calls, so the replicas stay equal.
  Shares issue(Collective c, DataType t, size_t bytes);

  // After the call: the all-gathered times of every rank (ranks x paths, row-major).
  Result update(Collective c, DataType t, size_t bytes, std::span<const double> rank_path_seconds,
                int num_ranks);
  // The same for a call made with `used` (Balancer::observe_used).
  Result update_used(Collective c, DataType t, size_t bytes, const Shares& used,
                     std::span<const double> rank_path_seconds, int num_ranks);

  // For the tuning cache.
  const std::map<SplitKey, std::unique_ptr<Balancer>>& entries() const { return entries_; }
  void restore(const SplitKey& key, const Shares& shares);

 private:
  Balancer& entry(const SplitKey& key);

  std::unique_ptr<Balancer> prototype_;
  size_t split_min_bytes_;
  std::map<SplitKey, std::unique_ptr<Balancer>> entries_;  // ordered: deterministic iteration
};

}  // namespace braid::balance
