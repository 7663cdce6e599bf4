// Logging in NCCL's format:  host:pid:tid [dev] BRAID INFO msg
// Level from BRAID_DEBUG (VERSION, WARN, INFO, TRACE), subsystems from BRAID_DEBUG_SUBSYS
// (comma list, '^' inverts), output to BRAID_DEBUG_FILE (%h host, %p pid) or stdout.
#pragma once

#include <cstdint>

namespace braid {

enum class LogLevel : int { None = 0, Version = 1, Warn = 2, Info = 3, Trace = 4 };

enum class LogSubsys : uint32_t {
  Init = 1u << 0,
  Coll = 1u << 1,
  Engine = 1u << 2,
  Shm = 1u << 3,
  Topo = 1u << 4,
  Plan = 1u << 5,
  Balance = 1u << 6,
  Env = 1u << 7,
  Alloc = 1u << 8,
  Device = 1u << 9,
  Shim = 1u << 10,
  Net = 1u << 11,
  All = ~0u,
};

// The device number printed in brackets; -1 prints nothing (no GPU bound to this thread).
void log_set_device(int dev);
// Re-reads the logging settings (tests change the environment).
void log_reload();
bool log_enabled(LogLevel level, LogSubsys subsys);
// The log's file descriptor, everything written so far flushed (for writers that bypass stdio).
int log_fd();

[[gnu::format(printf, 5, 6)]] void log_message(LogLevel level, LogSubsys subsys, const char* file,
                                               int line, const char* fmt, ...);

}  // namespace braid

#define BRAID_LOG_AT(level, subsys, ...)                                                      \
  do {                                                                                        \
    if (::braid::log_enabled(::braid::LogLevel::level, ::braid::LogSubsys::subsys))          \
      ::braid::log_message(::braid::LogLevel::level, ::braid::LogSubsys::subsys, __FILE__,   \
                           __LINE__, __VA_ARGS__);                                            \
  } while (0)
#define BRAID_WARN(subsys, ...) BRAID_LOG_AT(Warn, subsys, __VA_ARGS__)
#define BRAID_INFO(subsys, ...) BRAID_LOG_AT(Info, subsys, __VA_ARGS__)
#define BRAID_TRACE(subsys, ...) BRAID_LOG_AT(Trace, subsys, __VA_ARGS__)
