#include "common/result.h"

#include <cstdarg>
#include <cstdio>

#include "common/log.h"

namespace braid {

namespace {
thread_local std::string g_last_error;
}

const char* result_string(Result r) {
  switch (r) {
    case Result::Success: return "no error";
    case Result::UnhandledCudaError: return "unhandled cuda error (run with BRAID_DEBUG=INFO for details)";
    case Result::SystemError: return "unhandled system error (run with BRAID_DEBUG=INFO for details)";
    case Result::InternalError: return "internal error - please report this issue to the braid developers";
    case Result::InvalidArgument: return "invalid argument (run with BRAID_DEBUG=WARN for details)";
    case Result::InvalidUsage: return "invalid usage (run with BRAID_DEBUG=WARN for details)";
    case Result::RemoteError: return "remote process exited or there was a network error";
    case Result::InProgress: return "operation in progress";
  }
  return "unknown result code";
}

const char* last_error() { return g_last_error.c_str(); }

void clear_last_error() { g_last_error.clear(); }

namespace {

thread_local bool t_caller_reports = false;

Result record_failure(LogLevel level, Result r, const char* fmt, va_list ap) {
  char buf[1024];
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  g_last_error = buf;
  if (t_caller_reports && level == LogLevel::Warn) level = LogLevel::Info;
  log_message(level, LogSubsys::All, nullptr, 0, "%s: %s", result_string(r), buf);
  return r;
}

}  // namespace

FailuresReportedByCaller::FailuresReportedByCaller() : outer_(t_caller_reports) { t_caller_reports = true; }
FailuresReportedByCaller::~FailuresReportedByCaller() { t_caller_reports = outer_; }

Result fail(Result r, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  record_failure(LogLevel::Warn, r, fmt, ap);
  va_end(ap);
  return r;
}

Result fail_softly(Result r, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  record_failure(LogLevel::Info, r, fmt, ap);
  va_end(ap);
  return r;
}

}  // namespace braid
