// The rule that keeps braid's progress threads off the device's queues: a thread marked host-only
// may reduce on the host, copy between host buffers, meet other ranks and write host words, but
// never queue device work. A host thread that queues GPU work an application stream already waits
// on can deadlock with an application thread that holds CUDA's context lock while it waits for
// the device (docs/MULTIPATH.md, "The deadlock rule"). Every backend refuses device work from a
// marked thread, so a breach is an error in tests (the CPU backend) and never a hang.
#pragma once

#include "common/result.h"

namespace braid::device {

namespace detail {
inline thread_local bool host_only_thread = false;
}  // namespace detail

// Marks the calling thread for its lifetime.
inline void mark_host_only_thread() { detail::host_only_thread = true; }
inline bool on_host_only_thread() { return detail::host_only_thread; }

// What a backend answers device work from a marked thread (Success elsewhere).
inline Result refuse_on_host_only_thread() {
  if (!on_host_only_thread()) return Result::Success;
  return fail(Result::InternalError, "device work queued from a host-only thread (braid's progress thread)");
}

}  // namespace braid::device
