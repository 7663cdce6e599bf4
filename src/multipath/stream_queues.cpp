#include "multipath/stream_queues.h"

#include <algorithm>
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

Result any_rank_has_few_queues(int connections, const WordExchange& exchange, bool* any) {
  *any = false;
  const uint64_t few[1] = {progress_thread_may_queue(connections) ? 0u : 1u};
  std::vector<uint64_t> all;
  BRAID_TRY(exchange(few, &all));
  *any = std::find(all.begin(), all.end(), uint64_t{1}) != all.end();
  return Result::Success;
}

}  // namespace braid::multipath
