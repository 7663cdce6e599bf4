#include "common/thread_stacks.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>

namespace braid {
namespace {

std::string dump_to_text() {
  FILE* f = std::tmpfile();
  dump_thread_stacks(fileno(f));
  std::fflush(f);
  std::rewind(f);
  std::string text;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) text.append(buf, n);
  std::fclose(f);
  return text;
}

TEST(ThreadStacks, EveryThreadAnswersWithItsNameAndFrames) {
  std::mutex m;
  std::condition_variable cv;
  bool named = false, release = false;
  std::thread waiter([&] {
    name_this_thread("braid-test-waiter-long-name");
    std::unique_lock lock(m);
    named = true;
    cv.notify_all();
    cv.wait(lock, [&] { return release; });  // asleep in a futex while the dump interrupts it
  });
  {
    std::unique_lock lock(m);
    cv.wait(lock, [&] { return named; });
  }
  const std::string text = dump_to_text();
  {
    std::lock_guard lock(m);
    release = true;
  }
  cv.notify_all();
  waiter.join();  // the wait went on after the signal: it still needs the release

  EXPECT_NE(text.find("(braid-test-wait)"), std::string::npos) << text;  // 15 characters kept
  size_t threads = 0;
  for (size_t at = 0; (at = text.find("thread ", at)) != std::string::npos; ++at) ++threads;
  EXPECT_GE(threads, 2u) << text;
  EXPECT_EQ(text.find("did not answer"), std::string::npos) << text;
  // Frames are lines after each thread's head: more lines than heads.
  size_t lines = 0;
  for (char c : text) lines += c == '\n';
  EXPECT_GT(lines, 2 * threads) << text;
}

}  // namespace
}  // namespace braid
