// All BRAID_* settings, read from the environment in one place (settings_table.inc).
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace braid {

struct Settings {
#define BRAID_SETTING_TYPE_String std::string
#define BRAID_SETTING_TYPE_Int int64_t
#define BRAID_SETTING_TYPE_Double double
#define BRAID_SETTING_TYPE_Bool bool
#define BRAID_SETTING(field, type, def, desc) BRAID_SETTING_TYPE_##type field = def;
#include "common/settings_table.inc"
#undef BRAID_SETTING
};

// The settings as read at first use (or at the last settings_reload()).
const Settings& settings();
// Re-reads the environment; for tests and for tools that set variables before use.
void settings_reload();

struct SettingInfo {
  const char* env_name;   // "BRAID_TIMEOUT"
  const char* type;       // "String", "Int", "Double", "Bool"
  const char* default_text;
  const char* description;
};
std::span<const SettingInfo> setting_table();

}  // namespace braid
