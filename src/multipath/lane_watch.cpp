#include "multipath/lane_watch.h"

#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "common/log.h"
#include "common/settings.h"
#include "common/thread_stacks.h"
#include "multipath/progress_lane.h"

namespace braid::multipath {

namespace {

struct Watch {
  std::mutex mutex;
  struct Seen {
    uint64_t warned = 0, given_up = 0;  // the last call warned for, and given up on
  };
  std::map<ProgressLane*, Seen> lanes;
  bool started = false;

  void loop() {
    name_this_thread("braid-watch");
    std::unique_lock lock(mutex);
    for (;;) {
      // Never woken early: a lane is looked at within a second of the bound, which is enough.
      lock.unlock();
      std::this_thread::sleep_for(std::chrono::seconds(1));
      lock.lock();
      // No thread is left behind once every communicator is gone (a process that forks later
      // forks with no thread of braid's).
      if (lanes.empty()) {
        started = false;
        return;
      }
      for (auto& [lane, seen] : lanes) {
        uint64_t call = 0;
        std::string text;
        if (!lane->stuck_for(settings().timeout, &call, &text)) continue;
        if (call != seen.warned) {
          seen.warned = call;
          const std::string state = lane->device_state();
          warn_with_stacks(text + ": a CUDA call that cannot return, or a peer that stopped (BRAID_TIMEOUT bounds the "
                           "waits for peers)" + (state.empty() ? "" : "; " + state));
        }
        // Each wait for a peer ends by BRAID_TIMEOUT on its own, and a call holds few of them; a
        // thread inside one call for twice the bound is stuck in a call that may never return.
        // What waits for it is released: an error instead of a hang.
        if (call != seen.given_up && lane->stuck_for(2 * settings().timeout, &call, &text)) {
          seen.given_up = call;
          lane->give_up_stuck(text);
        }
      }
    }
  }

  // Both of the watch's WARNs; under BRAID_WATCH_STACKS every thread's stack follows.
  static void warn_with_stacks(const std::string& what) {
    BRAID_WARN(Balance, "%s%s", what.c_str(), settings().watch_stacks ? "; every thread's stack follows" : "");
    if (settings().watch_stacks) dump_thread_stacks(log_fd());
  }
};

// Never destroyed: its thread runs until the process ends.
Watch& watch() {
  static Watch* w = new Watch();
  return *w;
}

}  // namespace

void watch_lane(ProgressLane* lane) {
  Watch& w = watch();
  std::lock_guard lock(w.mutex);
  w.lanes.emplace(lane, Watch::Seen{});
  if (!w.started) {
    w.started = true;
    std::thread([&w] { w.loop(); }).detach();
  }
}

void unwatch_lane(ProgressLane* lane) {
  Watch& w = watch();
  std::lock_guard lock(w.mutex);
  w.lanes.erase(lane);
}

}  // namespace braid::multipath
