// Byte sizes as nccl-tests reads them: "4096", "256K", "64M", "1G", "1GiB", "2.5M" (powers of 1024).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace braid {

// nullopt for anything else (negative, unknown suffix, overflow).
std::optional<size_t> parse_byte_size(std::string_view text);

// A byte threshold from an Int setting: a negative value counts as 0 (every size reaches it).
inline size_t byte_threshold(int64_t setting) { return static_cast<size_t>(std::max<int64_t>(0, setting)); }

}  // namespace braid
