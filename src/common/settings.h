// All BRAID_* settings, read from the environment in one place (settings_table.inc).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

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
#define BRAID_NUMBER(field, type, def, lo, hi, desc) BRAID_SETTING(field, type, def, desc)
#include "common/settings_table.inc"
#undef BRAID_NUMBER
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
  bool ranged = false;  // Int and Double: only values in [min, max] are accepted
  double min = 0, max = 0;
};
std::span<const SettingInfo> setting_table();

// What the settings layer makes of `text` as the value of `info`: whether it is accepted, and if
// not why, and the value braid then uses (the default where refused), as text. The one parser:
// settings() and the tools that show settings (braid-plan --show-settings, braid doctor) use it.
struct SettingParse {
  bool accepted = false;
  std::string value;   // as braid uses it: an Int in decimal, a Double shortest round-trip
  std::string reason;  // where refused: "is not a number in [0.1, 86400]", ...
};
SettingParse parse_setting(const SettingInfo& info, const char* text);

// BRAID_* variables of the environment that braid does not read (a typo?), each with the known
// name nearest to it. Names that braid's tools, Python package and tests read are known too.
struct UnknownSetting {
  std::string name;
  std::string nearest;
};
std::vector<UnknownSetting> unknown_settings();
// Every BRAID_* name braid knows: the settings' and the other readers' (unknown_settings()).
std::vector<std::string> known_setting_names();

}  // namespace braid
