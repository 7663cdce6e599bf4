// Byte sizes as nccl-tests reads them: "4096", "256K", "64M", "1G", "1GiB", "2.5M" (powers of 1024).
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace braid {

// nullopt for anything else (negative, unknown suffix, overflow).
std::optional<size_t> parse_byte_size(std::string_view text);

}  // namespace braid
