#include "common/settings.h"

#include <atomic>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/log.h"

namespace braid {

namespace {

std::string env_name_of(const char* field) {
  std::string name = "BRAID_";
  for (const char* p = field; *p; ++p) name += static_cast<char>(std::toupper(static_cast<unsigned char>(*p)));
  return name;
}

// Malformed values keep the default and say so, rather than silently mean something else.
// The complaint goes straight to stderr: the logger itself is configured from these settings.
void complain(const char* name, const char* text, const char* what) {
  std::fprintf(stderr, "\nBRAID WARN %s=%s is not %s; keeping the default\n", name, text, what);
}

void parse_into(const char* name, const char* text, std::string& out) { (void)name; out = text; }

void parse_into(const char* name, const char* text, int64_t& out) {
  char* end = nullptr;
  const long long v = std::strtoll(text, &end, 0);
  if (end == text || *end != '\0') {
    complain(name, text, "an integer");
    return;
  }
  out = v;
}

void parse_into(const char* name, const char* text, double& out) {
  char* end = nullptr;
  const double v = std::strtod(text, &end);
  if (end == text || *end != '\0') {
    complain(name, text, "a number");
    return;
  }
  out = v;
}

void parse_into(const char* name, const char* text, bool& out) {
  const std::string v = text;
  if (v == "1" || v == "true" || v == "TRUE" || v == "yes" || v == "on") { out = true; return; }
  if (v == "0" || v == "false" || v == "FALSE" || v == "no" || v == "off") { out = false; return; }
  complain(name, text, "a boolean");
}

// A Choice: one of the alternatives "a|b|c", exactly.
void parse_choice(const char* name, const char* text, std::string& out, const char* alternatives) {
  const std::string alts = alternatives;
  size_t start = 0;
  for (;;) {
    const size_t bar = alts.find('|', start);
    if (alts.compare(start, bar == std::string::npos ? std::string::npos : bar - start, text) == 0) {
      out = text;
      return;
    }
    if (bar == std::string::npos) break;
    start = bar + 1;
  }
  std::string allowed;
  for (char c : alts) allowed += c == '|' ? std::string(", ") : std::string(1, c);
  complain(name, text, ("one of " + allowed).c_str());
}

// Every type's reader, by the name the table gives it.
void parse_String(const char* name, const char* text, std::string& out, const char*) { parse_into(name, text, out); }
void parse_Int(const char* name, const char* text, int64_t& out, const char*) { parse_into(name, text, out); }
void parse_Double(const char* name, const char* text, double& out, const char*) { parse_into(name, text, out); }
void parse_Bool(const char* name, const char* text, bool& out, const char*) { parse_into(name, text, out); }
void parse_Choice(const char* name, const char* text, std::string& out, const char* alternatives) {
  parse_choice(name, text, out, alternatives);
}

// The allowed values a reader gets: a Choice's "a|b|c", nothing for the other types.
inline const char* choices_String(const char*) { return nullptr; }
inline const char* choices_Int(int64_t) { return nullptr; }
inline const char* choices_Double(double) { return nullptr; }
inline const char* choices_Bool(bool) { return nullptr; }
inline const char* choices_Choice(const char* alternatives) { return alternatives; }

Settings read_environment() {
  Settings s;
#define BRAID_SETTING(field, type, def, desc)                                   \
  {                                                                            \
    static const std::string name = env_name_of(#field);                       \
    if (const char* v = std::getenv(name.c_str())) parse_##type(name.c_str(), v, s.field, choices_##type(def)); \
  }
#include "common/settings_table.inc"
#undef BRAID_SETTING
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
#include "common/settings_table.inc"
#undef BRAID_SETTING
  };
  static SettingInfo table[] = {
#define BRAID_SETTING(field, type, def, desc) {nullptr, #type, #def, desc},
#include "common/settings_table.inc"
#undef BRAID_SETTING
  };
  static bool filled = [] {
    for (size_t i = 0; i < std::size(table); ++i) table[i].env_name = names[i].c_str();
    return true;
  }();
  (void)filled;
  return table;
}

}  // namespace braid
