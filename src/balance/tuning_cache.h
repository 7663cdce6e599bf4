// Learned splits kept across runs in a JSON file:
//   {"version": 1, "balancer": "hylink", "share_units": 1024, "num_paths": 2,
//    "entries": [{"collective": "allreduce", "dtype": "float", "bucket": 28, "units": [922, 102]}]}
// Every rank must load the same file (or none) so the tables stay identical.
#pragma once

#include <string>

#include "balance/split_table.h"

namespace braid::balance {

Result save_tuning_cache(const SplitTable& table, const std::string& path);

// Restores the file's entries into `table` and returns how many. A missing file gives 0
// quietly; an unreadable, corrupt or mismatched file (other version, balancer, path count or
// granularity) gives 0 with a WARN and leaves the table untouched; it never throws.
size_t load_tuning_cache(SplitTable& table, const std::string& path);

}  // namespace braid::balance
