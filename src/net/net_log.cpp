#include "net/net_log.h"

#include <atomic>
#include <cstdarg>
#include <cstdio>

#include "common/log.h"

namespace braid::net {
namespace {
std::atomic<braid_nccl_logger_t> g_logger{nullptr};
}

void set_nccl_logger(braid_nccl_logger_t logger) { g_logger.store(logger); }

void net_log(int nccl_level, const char* file, int line, const char* fmt, ...) {
  char text[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  if (braid_nccl_logger_t logger = g_logger.load()) {
    logger(nccl_level, kNcclSubsysNet, file, line, "NET/braid : %s", text);
    return;
  }
  LogLevel level = nccl_level == kNcclLogWarn ? LogLevel::Warn : LogLevel::Info;
  if (log_enabled(level, LogSubsys::Net)) log_message(level, LogSubsys::Net, file, line, "NET/braid : %s", text);
}

}  // namespace braid::net
