// Highway kernels, compiled once per SIMD target (foreach_target.h) and chosen at run time.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "reduce/simd_kernels.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

#include "reduce/kernel.h"

HWY_BEFORE_NAMESPACE();
namespace braid::reduce {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

const char* TargetName() { return hwy::TargetName(HWY_TARGET); }
size_t VectorBytes() { return hn::Lanes(hn::ScalableTag<uint8_t>()); }

}  // namespace HWY_NAMESPACE
}  // namespace braid::reduce
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <algorithm>
#include <cctype>
#include <mutex>
#include <string>

#include "common/log.h"
#include "common/settings.h"
#include "reduce/reduce.h"
#include "reduce/simd.h"

namespace braid::reduce {

HWY_EXPORT(TargetName);
HWY_EXPORT(VectorBytes);

bool run_simd(DataType, const KernelArgs&) { return false; }

const char* simd_target() {
  apply_simd_setting_once();
  return HWY_DYNAMIC_DISPATCH(TargetName)();
}

size_t simd_lanes_bytes() {
  apply_simd_setting_once();
  return HWY_DYNAMIC_DISPATCH(VectorBytes)();
}

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Targets compiled into this file that the CPU supports, best (lowest bit) first. Read once,
// before anything forces a target (SupportedTargets() then reports only the forced one).
const std::vector<int64_t>& usable_targets() {
  static const std::vector<int64_t> targets = [] {
    std::vector<int64_t> out;
    for (int64_t t = hwy::SupportedTargets() & HWY_TARGETS; t != 0; t &= t - 1) out.push_back(t & -t);
    return out;
  }();
  return targets;
}

std::mutex& force_mutex() {
  static std::mutex mutex;
  return mutex;
}

Result force_locked(std::string_view name) {
  usable_targets();
  if (name.empty()) {
    hwy::SetSupportedTargetsForTest(0);
    hwy::GetChosenTarget().Update(hwy::SupportedTargets());
    return Result::Success;
  }
  std::string wanted = lower(name);
  for (int64_t t : usable_targets()) {
    if (lower(hwy::TargetName(t)) == wanted) {
      hwy::SetSupportedTargetsForTest(t);
      hwy::GetChosenTarget().Update(hwy::SupportedTargets());
      return Result::Success;
    }
  }
  return fail(Result::InvalidArgument, "reduce: SIMD target '%s' is not available on this CPU/build",
              std::string(name).c_str());
}

}  // namespace

std::vector<std::string_view> simd_targets_available() {
  std::vector<std::string_view> names;
  for (int64_t t : usable_targets()) names.emplace_back(hwy::TargetName(t));
  return names;
}

void apply_simd_setting_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    std::lock_guard<std::mutex> lock(force_mutex());
    const std::string& wanted = settings().simd;
    if (!wanted.empty() && force_locked(wanted) != Result::Success) {
      BRAID_WARN(Env, "BRAID_SIMD=%s is not available here; using the best target", wanted.c_str());
    }
  });
}

Result force_simd_target(std::string_view name) {
  apply_simd_setting_once();  // so BRAID_SIMD cannot later undo this choice
  std::lock_guard<std::mutex> lock(force_mutex());
  return force_locked(name);
}

}  // namespace braid::reduce
#endif  // HWY_ONCE
