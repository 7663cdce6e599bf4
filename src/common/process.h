// Whether another process still runs: one answer for every layer that watches a peer (the
// engine's waits, the net plugin's NIC monitor and relay pool).
#pragma once

#include <sys/types.h>

#include <cstdint>

namespace braid {

// True when process `pid` no longer runs: gone, or a zombie nobody reaped yet (a SIGKILLed child
// stays one until its parent waits for it). False for pid <= 0 (no process named) and for a
// process this one may not signal but that exists.
bool process_dead(pid_t pid);

// This process's pid namespace (the inode of /proc/self/ns/pid); 0 where /proc cannot say. Pids
// mean something only within one namespace: containers that share /dev/shm may each have their own.
uint64_t pid_namespace();

// Whether the process `pid` of pid namespace `pid_ns` (as it recorded them) is known to have ended:
// judged by pid only where it shares this process's namespace (or neither namespace is known);
// a process of another namespace is never called dead from its pid.
bool peer_process_dead(pid_t pid, uint64_t pid_ns);

}  // namespace braid
