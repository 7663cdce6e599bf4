// Logging for the net layer. Inside NCCL the plugin logs through the logger NCCL passes to init
// (so lines carry NCCL's prefix, level and NET subsystem); elsewhere (tests, tools) through
// braid's own log.
#pragma once

#include "net/abi.h"

namespace braid::net {

void set_nccl_logger(braid_nccl_logger_t logger);
[[gnu::format(printf, 4, 5)]] void net_log(int nccl_level, const char* file, int line,
                                           const char* fmt, ...);

}  // namespace braid::net

#define BRAID_NET_WARN(...) ::braid::net::net_log(kNcclLogWarn, __FILE__, __LINE__, __VA_ARGS__)
#define BRAID_NET_INFO(...) ::braid::net::net_log(kNcclLogInfo, __FILE__, __LINE__, __VA_ARGS__)
