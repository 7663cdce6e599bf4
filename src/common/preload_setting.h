// A Bool BRAID_* setting read before braid's settings are read (once, at
// the first NCCL call, so that a program may still set them until then), as libbraid.so loads or
// before a program first uses CUDA: on unless 0/false/off/no.
#pragma once

#include <strings.h>

#include <cstdlib>
#include <initializer_list>

namespace braid {

inline bool preload_setting_on(const char* name) {
  const char* text = std::getenv(name);
  if (text == nullptr) return true;
  for (const char* off : {"0", "false", "off", "no"})
    if (strcasecmp(text, off) == 0) return false;
  return true;
}

}  // namespace braid
