// braid's progress threads queue GPU work that the callers' streams already wait on. A CUDA call
// that waits for the whole device while it holds CUDA's context lock (cudaHostRegister,
// cudaHostAlloc, cudaFreeHost, cudaFree, a large cudaMalloc), made by any other thread meanwhile,
// deadlocks with them: it waits for the streams, the streams for the progress thread, and the
// progress thread's next CUDA call for the lock (docs/MULTIPATH.md, "Where the meeting runs").
// braid's own such calls wait first until no progress thread of the process has work in hand. The
// application's are held back the same way where braid sees them: the drop-in's companion library
// (src/cuda_gate/) interposes the CUDA runtime's device-wide calls and first launches of kernels,
// and brackets each with device_wide_call_began/ended (docs/MULTIPATH.md, "The application's
// device-wide calls").
#pragma once

namespace braid {

// A job handed to a progress thread, and that job finished (or failed). Any thread. A job handed in
// while an application thread is inside a device-wide call waits first, up to kHoldBackSeconds,
// for that call to end: the caller's stream must not wait on a progress thread that cannot queue
// its GPU work until the device is idle.
void lane_work_began();
void lane_work_ended();
// Jobs in hand in the process now.
long lanes_work_in_hand();

// Before one of braid's own device-wide CUDA calls (`what` names it): waits until no progress
// thread of the process has a job in hand, for at most `seconds` (a job ends within the bounds of
// its own waits, but other threads may keep handing in more); past it, says so at INFO and goes
// on. Returns whether the lanes were idle.
bool quiet_lanes(const char* what, double seconds);

// An application thread's device-wide CUDA call, from entry to return (the companion library's
// hooks). began() waits until no job is in hand, for at most kDeviceWideWaitSeconds or half of
// BRAID_TIMEOUT, whichever is less, and from then until ended() new jobs hold back.
void device_wide_call_began(const char* what);
void device_wide_call_ended();
// Application threads inside device-wide calls now.
long device_wide_calls();

// How long a new job holds back for an application's device-wide call. Bounded: in one process
// that drives several ranks, the call may itself wait for a job that needs this one's peer. Past
// it the job goes on: the caller's own next CUDA call then waits behind the device-wide call
// instead of queueing a stream wait the device could not pass.
inline constexpr double kHoldBackSeconds = 0.1;
inline constexpr double kDeviceWideWaitSeconds = 5.0;

// The bound braid's own calls give quiet_lanes: the lanes may wait for this very thread's next
// call (several ranks or communicators driven by one thread), so a short one, not BRAID_TIMEOUT.
inline constexpr double kQuietLanesSeconds = 1.0;

}  // namespace braid
