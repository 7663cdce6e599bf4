#include "common/sizes.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <string>

namespace braid {

std::optional<size_t> parse_byte_size(std::string_view text) {
  const std::string s(text);
  if (s.empty() || !(std::isdigit(static_cast<unsigned char>(s[0])) || s[0] == '.')) return std::nullopt;
  char* end = nullptr;
  const double value = std::strtod(s.c_str(), &end);
  std::string suffix(end);
  for (auto& c : suffix) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (suffix == "B") suffix.clear();
  if (suffix.size() > 1 && (suffix.substr(1) == "IB" || suffix.substr(1) == "B")) suffix.resize(1);
  double scale = 1;
  if (suffix == "K") scale = 1024.0;
  else if (suffix == "M") scale = 1024.0 * 1024;
  else if (suffix == "G") scale = 1024.0 * 1024 * 1024;
  else if (!suffix.empty()) return std::nullopt;
  const double bytes = value * scale;
  if (!std::isfinite(bytes) || bytes < 0 || bytes >= 18446744073709551615.0) return std::nullopt;
  return static_cast<size_t>(bytes);
}

}  // namespace braid
