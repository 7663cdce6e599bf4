// Worker threads the system cannot start are an error the caller gets back, not std::terminate
// (issue 43, row 9: BRAID_THREADS=100000 aborted the process past the C API's guard). The settings
// refuse such counts (a range); this covers a system that runs out of threads below it.
#include <gtest/gtest.h>
#include <pthread.h>

#include <cstdlib>

#include "common/settings.h"
#include "engine/worker_pool.h"
#include "harness.h"

#include "support/sanitizer_suppressions.h"

namespace braid {
namespace {

// New threads of this process get stacks no machine can give, until the end of the scope.
class ImpossibleThreadStacks {
 public:
  ImpossibleThreadStacks() {
    pthread_getattr_default_np(&saved_);
    pthread_attr_t huge;
    pthread_attr_init(&huge);
    pthread_attr_setstacksize(&huge, size_t{1} << 46);  // 64 TiB
    pthread_setattr_default_np(&huge);
    pthread_attr_destroy(&huge);
  }
  ~ImpossibleThreadStacks() { pthread_setattr_default_np(&saved_); }

 private:
  pthread_attr_t saved_;
};

TEST(EngineWorkerPool, ThreadsThatCannotStartAreAnError) {
  std::unique_ptr<engine::WorkerPool> pool;
  Result r = Result::Success;
  {
    ImpossibleThreadStacks no_threads;
    r = engine::WorkerPool::create(4, {}, &pool);
  }
  if (r == Result::Success) GTEST_SKIP() << "this machine started threads with 64 TiB stacks";
  EXPECT_EQ(r, Result::SystemError);
  EXPECT_NE(std::string(last_error()).find("could not start worker thread 1 of 4"), std::string::npos) << last_error();
  EXPECT_EQ(pool, nullptr);
  ASSERT_EQ(engine::WorkerPool::create(2, {}, &pool), Result::Success);
  EXPECT_EQ(pool->size(), 2);
}

TEST(EngineWorkerPool, HugeThreadCountIsRefusedAndTheCommunicatorStarts) {
  setenv("BRAID_THREADS", "100000", 1);
  settings_reload();
  EXPECT_EQ(settings().threads, 0);
  auto outcomes = test::run_ranks(test::Mode::Threads, 2, test::load_test_topology(), 8,
                                  [](engine::Communicator&, int, unsigned char*) { return Result::Success; });
  unsetenv("BRAID_THREADS");
  settings_reload();
  for (const auto& o : outcomes) EXPECT_EQ(o.result, Result::Success) << o.error;
}

}  // namespace
}  // namespace braid
