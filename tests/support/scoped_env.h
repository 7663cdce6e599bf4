// Sets an environment variable for a scope, with braid's settings reread on both ends.
#pragma once

#include <cstdlib>

#include "common/settings.h"

namespace braid::test {

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    setenv(name, value, 1);
    settings_reload();
  }
  ~ScopedEnv() {
    unsetenv(name_);
    settings_reload();
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
};

}  // namespace braid::test
