// Bounded waiting for the engine: every wait polls with back-off and gives up when the
// communicator's abort word is set, when the timeout passes, or (for the waits of the calling
// thread) when a peer process has died (judged by pid within one pid namespace only).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <vector>

#include "common/process.h"
#include "device/backoff.h"

namespace braid::engine {

enum class WaitOutcome { Done, Aborted, TimedOut, PeerDied };

// A rank that is another process, as it recorded itself in the control segment: its pid means
// something only in its pid namespace (containers sharing /dev/shm may each have their own).
struct PeerProcess {
  int rank = 0;
  pid_t pid = 0;
  uint64_t pid_ns = 0;  // 0: unknown
  bool dead() const { return peer_process_dead(pid, pid_ns); }
};

struct WaitContext {
  const std::atomic<uint64_t>* abort_word = nullptr;  // shared: any rank may set it
  std::chrono::steady_clock::time_point start;        // when the collective began
  double timeout_s = 30.0;
  // Peers to watch (calling thread only): the other ranks that are other processes.
  const std::vector<PeerProcess>* peers = nullptr;
  int* dead_rank = nullptr;  // set on PeerDied
  // Whether `rank` still owes something this wait needs. Only such a rank's death fails the
  // wait: a peer that finished its part and exited is no failure.
  std::function<bool(int rank)> blocks;
  // Yield rather than sleep for this long after spinning (device::Backoff): for the waits of a
  // host meeting on the application's thread, which must end soon after the last rank arrives.
  uint64_t yield_window_ns = 0;
  // Called at every look while waiting (the waiting thread's own): a caller that watches host
  // words of its own meanwhile (the drop-in's timing stamps).
  std::function<void()> on_look;
};

template <class Ready>
WaitOutcome wait_until(const WaitContext& ctx, Ready ready) {
  device::Backoff backoff(ctx.yield_window_ns);
  auto last_peer_check = std::chrono::steady_clock::now();
  for (;;) {
    if (ctx.on_look) ctx.on_look();
    if (ready()) return WaitOutcome::Done;
    if (backoff.sleeping()) {
      if (ctx.abort_word != nullptr && ctx.abort_word->load(std::memory_order_acquire) != 0)
        return WaitOutcome::Aborted;
      const auto now = std::chrono::steady_clock::now();
      if (std::chrono::duration<double>(now - ctx.start).count() > ctx.timeout_s)
        return WaitOutcome::TimedOut;
      if (ctx.peers != nullptr && ctx.blocks &&
          now - last_peer_check > std::chrono::milliseconds(20)) {
        last_peer_check = now;
        for (const PeerProcess& peer : *ctx.peers)
          if (ctx.blocks(peer.rank) && peer.dead()) {
            if (ctx.dead_rank) *ctx.dead_rank = peer.rank;
            return WaitOutcome::PeerDied;
          }
      }
    }
    backoff.pause();
  }
}

}  // namespace braid::engine
