#include "common/settings.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/log.h"

extern char** environ;

namespace braid {

namespace {

std::string env_name_of(const char* field) {
  std::string name = "BRAID_";
  for (const char* p = field; *p; ++p) name += static_cast<char>(std::toupper(static_cast<unsigned char>(*p)));
  return name;
}

// Numbers are read by BRAID_NUMBER lines only, so none goes without a range.
#define BRAID_SETTING(field, type, def, desc)                                                     \
  static_assert(std::string_view(#type) != "Int" && std::string_view(#type) != "Double",         \
                "BRAID_" #field ": declare Int and Double settings with BRAID_NUMBER and a range");
#define BRAID_NUMBER(field, type, def, lo, hi, desc)                                              \
  static_assert(std::string_view(#type) == "Int" || std::string_view(#type) == "Double",         \
                "BRAID_" #field ": BRAID_NUMBER is for Int and Double settings");                 \
  static_assert((lo) <= (def) && (def) <= (hi), "BRAID_" #field ": the default lies outside the range");
#include "common/settings_table.inc"
#undef BRAID_NUMBER
#undef BRAID_SETTING

// BRAID_* names read outside the settings table, so that setting them draws no "unknown" warning.
constexpr const char* kOtherNames[] = {
    "BRAID_BUILD_DIR",    // the Python package: the build folder holding braid's tools (tools.py)
    "BRAID_SIM_TOPO",     // `braid bench` and run.sh: the simulator's default topology
    "BRAID_CMAKE_ARGS",   // run.sh and test.sh: extra CMake arguments
    "BRAID_LIB",          // bench/train/run.sh: the drop-in to preload
    // Test programs and CI.
    "BRAID_WHEEL", "BRAID_FAKE_NCCL_PATH", "BRAID_SHIM_LIBRARY_PATH", "BRAID_NET_PLUGIN_PATH",
    "BRAID_FUZZ_ID_FILE", "BRAID_FUZZ_CASES", "BRAID_FUZZ_TIMEOUT", "BRAID_FUZZ_BIG_RUNS",
    "BRAID_MIXED_HOST_RANKS", "BRAID_MIXED_ID_FILE", "BRAID_MIXED_ROUNDS", "BRAID_MIXED_MIB",
    "BRAID_TEST_PROGRESS",
};

std::string number_text(double v) {
  char text[64];
  const auto r = std::to_chars(text, text + sizeof text, v);
  return std::string(text, r.ptr);
}

std::string range_text(const SettingInfo& info) {
  return "[" + number_text(info.min) + ", " + number_text(info.max) + "]";
}

// The default as braid keeps it: without a string's quotes, a Choice's first value.
std::string default_value(const SettingInfo& info) {
  std::string text = info.default_text;
  if (text.size() >= 2 && text.front() == '"' && text.back() == '"') text = text.substr(1, text.size() - 2);
  if (std::string_view(info.type) == "Choice") text = first_choice(text.c_str());
  return text;
}

// Each type's reader: the value, or nullopt with *reason saying what the text is not.
// A decimal integer may end in K, M, G or T (either case): powers of 1024, as nccl-tests reads
// sizes, so that BRAID_SPLIT_MIN_BYTES=1M means what it says.
int size_shift(char suffix) {
  switch (suffix) {
    case 'k': case 'K': return 10;
    case 'm': case 'M': return 20;
    case 'g': case 'G': return 30;
    case 't': case 'T': return 40;
    default: return -1;
  }
}

std::optional<int64_t> read_int(const SettingInfo& info, const char* text, std::string* reason) {
  *reason = "not an integer in " + range_text(info) + " (K, M, G, T allowed)";
  std::string_view digits(text);
  const bool negative = !digits.empty() && digits.front() == '-';
  if (negative || (!digits.empty() && digits.front() == '+')) digits.remove_prefix(1);
  int base = 10, shift = 0;
  if (digits.size() > 2 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X')) {
    digits.remove_prefix(2);
    base = 16;
  } else if (digits.size() > 1 && size_shift(digits.back()) > 0) {
    shift = size_shift(digits.back());
    digits.remove_suffix(1);
  }
  uint64_t magnitude = 0;
  const auto r = std::from_chars(digits.data(), digits.data() + digits.size(), magnitude, base);
  if (digits.empty() || r.ec != std::errc() || r.ptr != digits.data() + digits.size()) return std::nullopt;
  if (magnitude > (uint64_t{1} << (63 - shift))) return std::nullopt;
  magnitude <<= shift;
  if (magnitude > (uint64_t{1} << 63) - (negative ? 0 : 1)) return std::nullopt;
  const auto v = negative ? static_cast<int64_t>(0 - magnitude) : static_cast<int64_t>(magnitude);
  if (static_cast<long double>(v) < info.min || static_cast<long double>(v) > info.max) return std::nullopt;
  return v;
}

std::optional<double> read_double(const SettingInfo& info, const char* text, std::string* reason) {
  *reason = "not a number in " + range_text(info);
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text, &end);
  if (end == text || *end != '\0') return std::nullopt;
  if (!(v >= info.min && v <= info.max)) return std::nullopt;  // nan and inf fail here too
  return v;
}

std::optional<bool> read_bool(const char* text, std::string* reason) {
  *reason = "not a boolean (1, true, yes, on or 0, false, no, off)";
  const std::string v = text;
  if (v == "1" || v == "true" || v == "TRUE" || v == "yes" || v == "on") return true;
  if (v == "0" || v == "false" || v == "FALSE" || v == "no" || v == "off") return false;
  return std::nullopt;
}

// A Choice: one of the alternatives "a|b|c", exactly.
std::optional<std::string> read_choice(const SettingInfo& info, const char* text, std::string* reason) {
  std::string alts = info.default_text;
  if (alts.size() >= 2 && alts.front() == '"') alts = alts.substr(1, alts.size() - 2);
  size_t start = 0;
  for (;;) {
    const size_t bar = alts.find('|', start);
    if (alts.compare(start, bar == std::string::npos ? std::string::npos : bar - start, text) == 0) return text;
    if (bar == std::string::npos) break;
    start = bar + 1;
  }
  std::string allowed;
  for (char c : alts) allowed += c == '|' ? std::string(", ") : std::string(1, c);
  *reason = "not one of " + allowed;
  return std::nullopt;
}

// Malformed values keep the default and say so, rather than silently mean something else.
// The complaint goes straight to stderr: the logger itself is configured from these settings.
void complain(const SettingInfo& info, const char* text, const std::string& reason) {
  std::fprintf(stderr, "\nBRAID WARN %s=%s is %s; keeping the default %s\n", info.env_name, text, reason.c_str(),
               default_value(info).c_str());
}

template <class T>
void take(const SettingInfo& info, const char* text, std::optional<T> v, const std::string& reason, T& out) {
  if (v) out = std::move(*v);
  else complain(info, text, reason);
}

// Reads the variable of `info`, where set, into the field.
void read_into(const SettingInfo& info, std::string& out) {
  const char* text = std::getenv(info.env_name);
  if (text == nullptr) return;
  std::string reason;
  if (std::string_view(info.type) == "Choice") take(info, text, read_choice(info, text, &reason), reason, out);
  else out = text;
}
void read_into(const SettingInfo& info, int64_t& out) {
  std::string reason;
  if (const char* text = std::getenv(info.env_name)) take(info, text, read_int(info, text, &reason), reason, out);
}
void read_into(const SettingInfo& info, double& out) {
  std::string reason;
  if (const char* text = std::getenv(info.env_name)) take(info, text, read_double(info, text, &reason), reason, out);
}
void read_into(const SettingInfo& info, bool& out) {
  std::string reason;
  if (const char* text = std::getenv(info.env_name)) take(info, text, read_bool(text, &reason), reason, out);
}

// Levenshtein distance, for the nearest known name of a misspelt one.
size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

Settings read_environment() {
  Settings s;
  const auto table = setting_table();
  size_t i = 0;
#define BRAID_SETTING(field, type, def, desc) read_into(table[i++], s.field);
#define BRAID_NUMBER(field, type, def, lo, hi, desc) BRAID_SETTING(field, type, def, desc)
#include "common/settings_table.inc"
#undef BRAID_NUMBER
#undef BRAID_SETTING
  for (const UnknownSetting& u : unknown_settings())
    std::fprintf(stderr, "\nBRAID WARN %s is not a braid setting (did you mean %s?); it is ignored\n", u.name.c_str(),
                 u.nearest.c_str());
  return s;
}

std::mutex g_mutex;  // makes and replaces the settings; reading them takes no lock
std::atomic<const Settings*> g_settings{nullptr};
// Every Settings object ever made, owned here (under g_mutex) and never freed: references handed
// out before a reload stay valid, and the objects are reachable, not leaked. One per reload.
std::vector<std::unique_ptr<const Settings>>& g_all_settings = *new std::vector<std::unique_ptr<const Settings>>();

const Settings* keep(Settings s) {
  g_all_settings.push_back(std::make_unique<const Settings>(std::move(s)));
  return g_all_settings.back().get();
}

}  // namespace

std::string first_choice(const char* alternatives) {
  const std::string alts = alternatives;
  return alts.substr(0, alts.find('|'));
}

// Read on every collective's path (several threads at once): the common case is one load.
const Settings& settings() {
  if (const Settings* s = g_settings.load(std::memory_order_acquire)) return *s;
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_settings.load(std::memory_order_relaxed) == nullptr) g_settings.store(keep(read_environment()), std::memory_order_release);
  return *g_settings.load(std::memory_order_relaxed);
}

void settings_reload() {
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    // The old object stays (g_all_settings): references handed out earlier stay valid.
    g_settings.store(keep(read_environment()), std::memory_order_release);
  }
  log_reload();
}

std::span<const SettingInfo> setting_table() {
  static const std::string names[] = {
#define BRAID_SETTING(field, type, def, desc) env_name_of(#field),
#define BRAID_NUMBER(field, type, def, lo, hi, desc) BRAID_SETTING(field, type, def, desc)
#include "common/settings_table.inc"
#undef BRAID_NUMBER
#undef BRAID_SETTING
  };
  static SettingInfo table[] = {
#define BRAID_SETTING(field, type, def, desc) {nullptr, #type, #def, desc},
#define BRAID_NUMBER(field, type, def, lo, hi, desc) {nullptr, #type, #def, desc, true, double(lo), double(hi)},
#include "common/settings_table.inc"
#undef BRAID_NUMBER
#undef BRAID_SETTING
  };
  static bool filled = [] {
    for (size_t i = 0; i < std::size(table); ++i) table[i].env_name = names[i].c_str();
    return true;
  }();
  (void)filled;
  return table;
}

SettingParse parse_setting(const SettingInfo& info, const char* text) {
  SettingParse p;
  const std::string_view type = info.type;
  std::optional<std::string> value;
  if (type == "Int") {
    if (auto v = read_int(info, text, &p.reason)) value = std::to_string(*v);
  } else if (type == "Double") {
    if (auto v = read_double(info, text, &p.reason)) value = number_text(*v);
  } else if (type == "Bool") {
    if (auto v = read_bool(text, &p.reason)) value = *v ? "true" : "false";
  } else if (type == "Choice") {
    value = read_choice(info, text, &p.reason);
  } else {
    value = text;
  }
  p.accepted = value.has_value();
  if (p.accepted) p.reason.clear();
  p.value = p.accepted ? *value : default_value(info);
  return p;
}

std::vector<std::string> known_setting_names() {
  std::vector<std::string> names;
  for (const SettingInfo& s : setting_table()) names.push_back(s.env_name);
  names.insert(names.end(), std::begin(kOtherNames), std::end(kOtherNames));
  return names;
}

std::vector<UnknownSetting> unknown_settings() {
  const std::vector<std::string> known = known_setting_names();
  std::vector<UnknownSetting> unknown;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string_view entry = *e;
    if (!entry.starts_with("BRAID_")) continue;
    const std::string name(entry.substr(0, entry.find('=')));
    if (std::find(known.begin(), known.end(), name) != known.end()) continue;
    std::string upper = name;
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    const auto nearest = std::min_element(known.begin(), known.end(), [&](const std::string& a, const std::string& b) {
      return edit_distance(upper, a) < edit_distance(upper, b);
    });
    unknown.push_back({name, *nearest});
  }
  std::sort(unknown.begin(), unknown.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  return unknown;
}

}  // namespace braid
