// All BRAID_* settings, read from the environment in one place (settings_table.inc).
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace braid {

// A Choice setting's default: the first of its allowed values "a|b|c".
std::string first_choice(const char* alternatives);

struct Settings {
#define BRAID_SETTING_TYPE_String std::string
#define BRAID_SETTING_TYPE_Int int64_t
#define BRAID_SETTING_TYPE_Double double
#define BRAID_SETTING_TYPE_Bool bool
#define BRAID_SETTING_TYPE_Choice std::string
#define BRAID_SETTING_INIT_String(def) def
#define BRAID_SETTING_INIT_Int(def) def
#define BRAID_SETTING_INIT_Double(def) def
#define BRAID_SETTING_INIT_Bool(def) def
#define BRAID_SETTING_INIT_Choice(def) first_choice(def)
#define BRAID_SETTING(field, type, def, desc) BRAID_SETTING_TYPE_##type field = BRAID_SETTING_INIT_##type(def);
#include "common/settings_table.inc"
#undef BRAID_SETTING
};

// The settings as read at first use (or at the last settings_reload()).
const Settings& settings();
// Re-reads the environment; for tests and for tools that set variables before use.
void settings_reload();

struct SettingInfo {
  const char* env_name;   // "BRAID_TIMEOUT"
  const char* type;       // "String", "Int", "Double", "Bool", "Choice"
  const char* default_text;  // a Choice's: its allowed values, a|b|c, the default first
  const char* description;
};
std::span<const SettingInfo> setting_table();

}  // namespace braid
