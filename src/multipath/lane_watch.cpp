#include "multipath/lane_watch.h"

#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "common/log.h"
#include "common/settings.h"
#include "multipath/progress_lane.h"

namespace braid::multipath {

namespace {

struct Watch {
  std::mutex mutex;
  std::map<const ProgressLane*, uint64_t> lanes;  // each lane and the last call it was warned for
  bool started = false;

  void loop() {
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
      for (auto& [lane, warned] : lanes) {
        uint64_t call = 0;
        std::string text;
        if (!lane->stuck_for(settings().timeout, &call, &text) || call == warned) continue;
        warned = call;
        BRAID_WARN(Balance, "%s: a CUDA call that cannot return, or a peer that stopped (BRAID_TIMEOUT bounds the "
                   "waits for peers)", text.c_str());
      }
    }
  }
};

// Never destroyed: its thread runs until the process ends.
Watch& watch() {
  static Watch* w = new Watch();
  return *w;
}

}  // namespace

void watch_lane(const ProgressLane* lane) {
  Watch& w = watch();
  std::lock_guard lock(w.mutex);
  w.lanes.emplace(lane, 0);
  if (!w.started) {
    w.started = true;
    std::thread([&w] { w.loop(); }).detach();
  }
}

void unwatch_lane(const ProgressLane* lane) {
  Watch& w = watch();
  std::lock_guard lock(w.mutex);
  w.lanes.erase(lane);
}

}  // namespace braid::multipath
