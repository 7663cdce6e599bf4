// The sanitizer builds' suppressions for tests that change settings or run ranks as processes.
// Include it once, from the test's own .cpp: it defines the hooks the sanitizer runtimes call.
#pragma once

// settings_reload() leaks the previous Settings on purpose (references handed out stay valid);
// tell LeakSanitizer so the ASan builds of tests that change BRAID_* settings stay clean.
extern "C" const char* __lsan_default_suppressions() { return "leak:braid::settings_reload\n"; }

// ThreadSanitizer cannot see the ordering a peer process provides (release/acquire through shared
// memory), so it reports host-slot hand-offs ordered through a peer's counter as races. Those
// accesses are the data movement of the CPU backend and the host workers; the thread-rank sweeps
// of tests/engine/collectives_test.cpp check the same code without any suppression.
extern "C" const char* __tsan_default_suppressions() {
  return "race:braid::device::CpuBackend::execute\nrace:run_host_slice\nrace:braid::reduce::\n";
}
