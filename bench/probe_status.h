// The status check of the probes that mix runtime and driver calls (stream_wait_probe,
// host_block_probe): any non-zero status prints where and exits.
#pragma once

#include <cstdio>
#include <cstdlib>

#define CHECK(x)                                                                      \
  do {                                                                                \
    auto e_ = (x);                                                                    \
    if (e_ != 0) {                                                                    \
      std::fprintf(stderr, "%s:%d %s failed: %d\n", __FILE__, __LINE__, #x, (int)e_); \
      std::exit(2);                                                                   \
    }                                                                                 \
  } while (0)
