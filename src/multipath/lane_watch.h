// A thread per process that looks at every progress lane once a second and says, once per call,
// when a lane's thread has been inside one split call longer than BRAID_TIMEOUT. The lane bounds
// its waits for peers, but a CUDA call that cannot return leaves a rank silent while its peers
// time out; this WARN names the call and the step it is at (docs/MULTIPATH.md).
#pragma once

namespace braid::multipath {

class ProgressLane;

// The lane is looked at from now on, until unwatch_lane (which returns once no look is under way).
void watch_lane(const ProgressLane* lane);
void unwatch_lane(const ProgressLane* lane);

}  // namespace braid::multipath
