// A thread per process that looks at every progress lane once a second and says, once per call,
// when a lane's thread has been inside one split call longer than BRAID_TIMEOUT. The lane bounds
// its waits for peers, but a CUDA call that cannot return leaves a rank silent while its peers
// time out; this WARN names the call and the step it is at (docs/MULTIPATH.md). At twice the bound
// it gives up on the call (ProgressLane::give_up_stuck): the communicator fails and every stream
// waiting on braid is released, so the application gets an error rather than a hang. The same
// for the device: a lane whose GPU has not moved towards a release the lane queued for
// BRAID_TIMEOUT gets a WARN (with what every rank's GPU reached), and at twice the bound the same
// give-up.
#pragma once

namespace braid::multipath {

class ProgressLane;

// The lane is looked at from now on, until unwatch_lane (which returns once no look is under way).
void watch_lane(ProgressLane* lane);
void unwatch_lane(ProgressLane* lane);

}  // namespace braid::multipath
