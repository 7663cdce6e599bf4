// braid's one result type. Values equal ncclResult_t's, so the shim converts by cast
// (checked by static_assert where nccl.h is visible).
#pragma once

#include <string>

namespace braid {

enum class Result : int {
  Success = 0,
  UnhandledCudaError = 1,
  SystemError = 2,
  InternalError = 3,
  InvalidArgument = 4,
  InvalidUsage = 5,
  RemoteError = 6,
  InProgress = 7,
};

// The text ncclGetErrorString gives for the same value.
const char* result_string(Result r);

// The calling thread's last error text, as ncclGetLastError returns it.
const char* last_error();
void clear_last_error();

// Records `text` as the last error and logs it as a WARN; returns `r` so callers can write
// `return fail(Result::InvalidArgument, "count %zu too large", n);`.
[[gnu::format(printf, 2, 3)]] Result fail(Result r, const char* fmt, ...);
// The same, logged as INFO: a failure the caller may still recover from (it calls fail() if not).
[[gnu::format(printf, 2, 3)]] Result fail_softly(Result r, const char* fmt, ...);

// While one lives, fail() on this thread logs at INFO, not WARN: for a caller that reports the
// failure itself, once, from last_error() (the drop-in making braid's part of a communicator,
// where each layer's failure would otherwise repeat the same cause as a WARN of its own).
class FailuresReportedByCaller {
 public:
  FailuresReportedByCaller();
  ~FailuresReportedByCaller();
  FailuresReportedByCaller(const FailuresReportedByCaller&) = delete;
  FailuresReportedByCaller& operator=(const FailuresReportedByCaller&) = delete;

 private:
  bool outer_;
};

}  // namespace braid

// Propagates a non-success Result from the current function.
#define BRAID_TRY(expr)                                          \
  do {                                                           \
    ::braid::Result braid_try_result_ = (expr);                  \
    if (braid_try_result_ != ::braid::Result::Success) return braid_try_result_; \
  } while (0)
