#include "shim/comm_config.h"

#include <cstdlib>

namespace braid::shim {

bool made_blocking(const ncclConfig_t* given, const CommState* parent, const char* env_blocking) {
  // NCCL reads the variable as an integer and uses it only at 0 or 1.
  if (env_blocking != nullptr && *env_blocking != '\0') {
    char* end = nullptr;
    const long value = std::strtol(env_blocking, &end, 0);
    if (*end == '\0' && (value == 0 || value == 1)) return value == 1;
  }
  if (given != nullptr) return given->blocking == NCCL_CONFIG_UNDEF_INT || given->blocking != 0;
  if (parent != nullptr) return parent->blocking;
  return true;
}

}  // namespace braid::shim
