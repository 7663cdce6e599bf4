// What braid logs while `emit` runs, with some BRAID_* settings for that time: they are set in the
// environment with BRAID_DEBUG_FILE pointing at a temporary file, reloaded, and unset after.
#pragma once

#include <stdlib.h>
#include <unistd.h>

#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "common/settings.h"

namespace braid::test {

inline std::string capture_log(const std::vector<std::pair<const char*, const char*>>& settings,
                               const std::function<void()>& emit) {
  char path[] = "/tmp/braid_log_testXXXXXX";
  close(mkstemp(path));
  for (const auto& [name, value] : settings) setenv(name, value, 1);
  setenv("BRAID_DEBUG_FILE", path, 1);
  settings_reload();
  emit();
  for (const auto& [name, value] : settings) unsetenv(name);
  unsetenv("BRAID_DEBUG_FILE");
  settings_reload();
  std::ifstream f(path);
  std::stringstream text;
  text << f.rdbuf();
  unlink(path);
  return text.str();
}

}  // namespace braid::test
