#include "engine/faults.h"

#include <array>
#include <charconv>
#include <mutex>
#include <string>

#include "common/settings.h"

namespace braid::engine {

namespace {

constexpr std::array<std::string_view, 7> kNames = {"segments", "register", "barrier", "d2h", "h2d", "copy", "reduce"};

struct Fault {
  bool armed = false;
  FaultStep step = FaultStep::Segments;
  int rank = -1;
  long nth = 1;
};

// Parsed from the setting each time it changes (tests reload settings between cases).
Fault parse(const std::string& text) {
  Fault f;
  const auto at = text.find('@');
  if (at == std::string::npos) return f;
  const std::string_view name(text.data(), at);
  for (size_t i = 0; i < kNames.size(); ++i)
    if (kNames[i] == name) {
      f.step = static_cast<FaultStep>(i);
      f.armed = true;
    }
  const char* p = text.data() + at + 1;
  const char* end = text.data() + text.size();
  auto r = std::from_chars(p, end, f.rank);
  if (r.ec != std::errc() || f.rank < 0) f.armed = false;
  if (r.ptr < end && *r.ptr == '#' && std::from_chars(r.ptr + 1, end, f.nth).ec != std::errc()) f.armed = false;
  return f;
}

}  // namespace

std::string_view fault_step_name(FaultStep step) { return kNames[static_cast<size_t>(step)]; }

bool fault_injected(FaultStep step, int rank) {
  const std::string& text = settings().fault;
  if (text.empty()) return false;
  const Fault f = parse(text);
  if (!f.armed || f.step != step || f.rank != rank) return false;
  // Passes are counted per process from the moment the settings were (re)loaded (ranks as
  // threads share the count, but only the named rank's passes reach it).
  static std::mutex mutex;
  static const Settings* counted_for = nullptr;
  static long passes = 0;
  std::lock_guard lock(mutex);
  if (counted_for != &settings()) {
    counted_for = &settings();
    passes = 0;
  }
  const long n = ++passes;
  return n == f.nth;
}

Result injected_failure(FaultStep step, int rank) {
  return fail(Result::InternalError, "rank %d: failure injected at step '%s' (BRAID_FAULT)", rank,
              std::string(fault_step_name(step)).c_str());
}

}  // namespace braid::engine
