#include "check.h"

#include <cstdarg>
#include <cstdio>
#include <cstdlib>

namespace braid::bench {

void die(const char* fmt, ...) {
  std::fflush(stdout);
  std::fprintf(stderr, "braid-bench: ");
  va_list args;
  va_start(args, fmt);
  std::vfprintf(stderr, fmt, args);
  va_end(args);
  std::fprintf(stderr, "\n");
  std::fflush(stderr);
  std::_Exit(2);  // rank threads may be inside collectives: no orderly teardown
}

}  // namespace braid::bench
