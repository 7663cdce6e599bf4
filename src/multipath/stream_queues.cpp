#include "multipath/stream_queues.h"

#include <cerrno>
#include <cstdlib>

namespace braid::multipath {

int cuda_connections(const char* value) {
  if (value == nullptr || *value == '\0') return kDefaultCudaConnections;
  char* end = nullptr;
  errno = 0;
  const long n = std::strtol(value, &end, 10);
  if (errno != 0 || end == value || *end != '\0' || n <= 0 || n > 1024) return kDefaultCudaConnections;
  return static_cast<int>(n);
}

Result any_rank_forbids_lane_queueing(const LaneQueueing& process, const WordExchange& exchange, bool* any) {
  *any = false;
  bool all_may_queue = false;
  BRAID_TRY(every_rank(progress_thread_may_queue(process), exchange, &all_may_queue));
  *any = !all_may_queue;
  return Result::Success;
}

}  // namespace braid::multipath
