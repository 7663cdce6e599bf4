// braid's progress threads queue GPU work that the callers' streams already wait on. A CUDA call
// that waits for the whole device while it holds CUDA's context lock (cudaHostRegister,
// cudaHostAlloc, cudaFreeHost, cudaFree, a large cudaMalloc), made by any other thread meanwhile,
// deadlocks with them: it waits for the streams, the streams for the progress thread, and the
// progress thread's next CUDA call for the lock (docs/MULTIPATH.md, "Where the meeting runs").
// braid cannot hold back the application's calls, but its own wait first until no progress thread
// of the process has work in hand.
#pragma once

namespace braid {

// A job handed to a progress thread, and that job finished (or failed). Any thread.
void lane_work_began();
void lane_work_ended();
// Jobs in hand in the process now.
long lanes_work_in_hand();

// Before one of braid's own device-wide CUDA calls (`what` names it): waits until no progress
// thread of the process has a job in hand, for at most `seconds` (a job ends within the bounds of
// its own waits, but other threads may keep handing in more); past it, says so at INFO and goes
// on. Returns whether the lanes were idle.
bool quiet_lanes(const char* what, double seconds);

// The bound braid's own calls give quiet_lanes: the lanes may wait for this very thread's next
// call (several ranks or communicators driven by one thread), so a short one, not BRAID_TIMEOUT.
inline constexpr double kQuietLanesSeconds = 1.0;

}  // namespace braid
