#include "multipath/caller_profile.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>

namespace braid::multipath {

namespace {

double micros(CallerProfile::Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

double quantile(const std::vector<float>& samples, double q) {
  if (samples.empty()) return 0;
  std::vector<float> sorted = samples;
  const size_t k = std::min(sorted.size() - 1, static_cast<size_t>(q * static_cast<double>(sorted.size() - 1) + 0.5));
  std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(k), sorted.end());
  return sorted[k];
}

// A thread's involuntary context switches so far, -1 where /proc does not say.
int64_t involuntary_switches(pid_t thread) {
  std::ifstream status("/proc/self/task/" + std::to_string(thread) + "/status");
  std::string key;
  while (status >> key) {
    if (key == "nonvoluntary_ctxt_switches:") {
      int64_t n = -1;
      status >> n;
      return n;
    }
  }
  return -1;
}

}  // namespace

const char* CallerProfile::phase_name(Phase phase) {
  static constexpr const char* kNames[kPhases] = {"shim", "scope", "settle", "prepare", "fork", "publish", "meet", "nccl", "hand-on", "join"};
  return phase >= 0 && phase < kPhases ? kNames[phase] : "?";
}

void CallerProfile::begin(Clock::time_point now) {
  if (thread_ == 0) {
    // Once (the first call's time includes it): the switches are counted from here.
    thread_ = static_cast<pid_t>(syscall(SYS_gettid));
    switches_before_ = involuntary_switches(thread_);
  }
  began_ = last_ = now;
}

void CallerProfile::mark(Phase phase, Clock::time_point now) {
  const double us = micros(now - last_);
  last_ = now;
  phase_sum_[phase] += us;
  phase_max_[phase] = std::max(phase_max_[phase], us);
  ++phase_calls_[phase];
  if (phase_samples_[phase].size() < kMaxSamples) phase_samples_[phase].push_back(static_cast<float>(us));
}

void CallerProfile::end(bool handed_on, Clock::time_point now) {
  ++calls_[handed_on];
  if (totals_[handed_on].size() < kMaxSamples) totals_[handed_on].push_back(static_cast<float>(micros(now - began_)));
}

double CallerProfile::total_quantile(bool handed_on, double q) const { return quantile(totals_[handed_on], q); }

double CallerProfile::phase_quantile(Phase phase, double q) const { return quantile(phase_samples_[phase], q); }

double CallerProfile::phase_mean(Phase phase) const {
  return phase_calls_[phase] == 0 ? 0 : phase_sum_[phase] / static_cast<double>(phase_calls_[phase]);
}

double CallerProfile::phase_max(Phase phase) const { return phase_max_[phase]; }

std::string CallerProfile::summary() const {
  char buffer[192];
  std::string text;
  for (const bool handed_on : {true, false}) {
    std::snprintf(buffer, sizeof buffer, "%s%llu split calls %s, caller us p50 %.2f p90 %.2f p99 %.2f max %.1f",
                  handed_on ? "" : "; ", static_cast<unsigned long long>(calls_[handed_on]),
                  handed_on ? "handed on" : "NCCL alone", total_quantile(handed_on, 0.5), total_quantile(handed_on, 0.9),
                  total_quantile(handed_on, 0.99), total_quantile(handed_on, 1.0));
    text += buffer;
  }
  text += "; phases p50/mean/max us:";
  for (int p = 0; p < kPhases; ++p) {
    const auto phase = static_cast<Phase>(p);
    std::snprintf(buffer, sizeof buffer, " %s %.2f/%.2f/%.1f", phase_name(phase), phase_quantile(phase, 0.5),
                  phase_mean(phase), phase_max(phase));
    text += buffer;
  }
  std::snprintf(buffer, sizeof buffer, "; wake-ups %llu", static_cast<unsigned long long>(wakeups_));
  text += buffer;
  const int64_t after = thread_ != 0 ? involuntary_switches(thread_) : -1;
  if (switches_before_ >= 0 && after >= 0) {
    std::snprintf(buffer, sizeof buffer, "; caller's involuntary switches %lld",
                  static_cast<long long>(after - switches_before_));
    text += buffer;
  }
  return text;
}

}  // namespace braid::multipath
