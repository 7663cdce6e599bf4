// A /dev/shm too small for braid's segments (Docker gives containers 64 MiB; issue 43, row 1):
// segments are allocated for real, so set-up fails cleanly on every rank, with a message naming
// /dev/shm's size and free space, what braid needs and what to do, instead of SIGBUS mid-collective.
// Each case runs in a child with a private mount namespace whose /dev/shm is a small tmpfs
// (skipped where the machine does not allow that).
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mount.h>

#include <chrono>
#include <cstdlib>
#include <vector>

#include "common/settings.h"
#include "harness.h"

#include "support/sanitizer_suppressions.h"
#include "isolated_child.h"

namespace braid {
namespace {

// In the calling (child) process only: /dev/shm becomes a fresh tmpfs of `mib` MiB.
bool private_small_shm(int mib, test::ChildReport* report) {
  if (unshare(CLONE_NEWNS) != 0 || mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    std::snprintf(report->skip, sizeof report->skip, "no private mount namespace here (%s)", strerror(errno));
    return false;
  }
  const std::string options = "size=" + std::to_string(mib) + "m,mode=1777";
  if (mount("tmpfs", "/dev/shm", "tmpfs", 0, options.c_str()) != 0) {
    std::snprintf(report->skip, sizeof report->skip, "cannot mount a tmpfs on /dev/shm (%s)", strerror(errno));
    return false;
  }
  return true;
}

// Two ranks (processes) run one 16 MB all_reduce and check it, in a /dev/shm of `shm_mib` MiB.
test::ChildEnd all_reduce_in_small_shm(int shm_mib, const char* staging_bytes) {
  return test::run_in_child([&](test::ChildReport* report) {
    if (!private_small_shm(shm_mib, report)) return;
    setenv("BRAID_TIMEOUT", "30", 1);
    if (staging_bytes != nullptr) setenv("BRAID_STAGING_BYTES", staging_bytes, 1);
    settings_reload();
    const auto topo = test::load_test_topology("h200x2");
    constexpr size_t kCount = 4 << 20;  // 16 MB of floats
    const auto t0 = std::chrono::steady_clock::now();
    auto outcomes = test::run_ranks(test::Mode::Processes, 2, topo, 8, [&](engine::Communicator& comm, int rank, unsigned char*) {
      std::vector<float> send(kCount, static_cast<float>(rank + 1)), recv(kCount, 0.f);
      BRAID_TRY(comm.all_reduce(send.data(), recv.data(), kCount, DataType::Float32, RedOp::Sum));
      for (float v : recv)
        if (v != 3.f) return fail(Result::InternalError, "wrong sum %g", static_cast<double>(v));
      return Result::Success;
    });
    report->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    for (int r = 0; r < 2; ++r) {
      report->result[r] = static_cast<int>(outcomes[r].result);
      std::snprintf(report->error[r], sizeof report->error[r], "%s", outcomes[r].error.c_str());
    }
  });
}

// 8 MiB cannot hold even the control segment's counters; 16 MiB holds it but not the staging.
TEST(EngineScarceShm, TooSmallFailsCleanlyOnEveryRankSayingWhatToDo) {
  for (const int mib : {8, 16}) {
    const test::ChildEnd end = all_reduce_in_small_shm(mib, nullptr);  // 64 MiB of staging asked for
    if (end.report.skip[0] != '\0') GTEST_SKIP() << end.report.skip;
    ASSERT_EQ(end.signal, 0) << "the child died of signal " << end.signal << " (SIGBUS is 7)";
    EXPECT_LT(end.report.seconds, 5.0) << "rank 1 waited for rank 0's set-up instead of learning of its failure";
    EXPECT_EQ(end.report.result[0], static_cast<int>(Result::SystemError)) << end.report.error[0];
    EXPECT_EQ(end.report.result[1], static_cast<int>(Result::RemoteError)) << end.report.error[1];
    for (int r = 0; r < 2; ++r) {
      const std::string text = end.report.error[r];
      EXPECT_NE(text.find("/dev/shm (size " + std::to_string(mib) + ".0 MiB"), std::string::npos) << text;
      EXPECT_NE(text.find("cannot hold braid's shared memory for this communicator: it needs"), std::string::npos) << text;
      EXPECT_NE(text.find("--shm-size="), std::string::npos) << text;
      EXPECT_NE(text.find("BRAID_STAGING_BYTES"), std::string::npos) << text;
    }
    EXPECT_NE(std::string(end.report.error[1]).find("rank 0 (pid"), std::string::npos) << end.report.error[1];
  }
}

// The remedy the message names works: staging that fits runs the same collective in pieces.
TEST(EngineScarceShm, StagingThatFitsRunsExactly) {
  const test::ChildEnd end = all_reduce_in_small_shm(16, "2097152");
  if (end.report.skip[0] != '\0') GTEST_SKIP() << end.report.skip;
  ASSERT_EQ(end.signal, 0);
  for (int r = 0; r < 2; ++r) EXPECT_EQ(end.report.result[r], 0) << end.report.error[r];
}

}  // namespace
}  // namespace braid
