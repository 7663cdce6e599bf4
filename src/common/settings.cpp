#include "common/settings.h"

#include <cctype>
#include <cstdlib>
#include <mutex>
#include <string>

#include "common/log.h"

#include <cstdio>

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

Settings read_environment() {
  Settings s;
#define BRAID_SETTING(field, type, def, desc)                                   \
  {                                                                            \
    static const std::string name = env_name_of(#field);                       \
    if (const char* v = std::getenv(name.c_str())) parse_into(name.c_str(), v, s.field); \
  }
#include "common/settings_table.inc"
#undef BRAID_SETTING
  return s;
}

std::mutex g_mutex;
Settings* g_settings = nullptr;

}  // namespace

const Settings& settings() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_settings == nullptr) g_settings = new Settings(read_environment());
  return *g_settings;
}

void settings_reload() {
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    // The old object is leaked on purpose: references handed out earlier stay valid.
    g_settings = new Settings(read_environment());
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
