// Whether another process still runs: one answer for every layer that watches a peer (the
// engine's waits, the net plugin's NIC monitor and relay pool).
#pragma once

#include <sys/types.h>

namespace braid {

// True when process `pid` no longer runs: gone, or a zombie nobody reaped yet (a SIGKILLed child
// stays one until its parent waits for it). False for pid <= 0 (no process named) and for a
// process this one may not signal but that exists.
bool process_dead(pid_t pid);

}  // namespace braid
