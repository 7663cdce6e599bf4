#include "common/log.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>

#include "common/settings.h"

namespace braid {

namespace {

struct LogState {
  std::atomic<int> level{-1};  // -1: not read yet
  std::atomic<uint32_t> mask{0};
  FILE* out = stdout;
  char host[64] = {};
  std::mutex write_mutex;
};

LogState& state() {
  static LogState s;
  return s;
}

thread_local int t_device = -1;

struct SubsysName {
  const char* name;
  LogSubsys bit;
};
constexpr SubsysName kSubsysNames[] = {
    {"INIT", LogSubsys::Init},     {"COLL", LogSubsys::Coll},   {"ENGINE", LogSubsys::Engine},
    {"SHM", LogSubsys::Shm},       {"TOPO", LogSubsys::Topo},   {"PLAN", LogSubsys::Plan},
    {"BALANCE", LogSubsys::Balance}, {"ENV", LogSubsys::Env},   {"ALLOC", LogSubsys::Alloc},
    {"DEVICE", LogSubsys::Device}, {"SHIM", LogSubsys::Shim},   {"NET", LogSubsys::Net},
    {"ALL", LogSubsys::All},
};

LogLevel parse_level(const std::string& v) {
  if (v == "VERSION") return LogLevel::Version;
  if (v == "WARN") return LogLevel::Warn;
  if (v == "INFO") return LogLevel::Info;
  if (v == "TRACE") return LogLevel::Trace;
  return LogLevel::None;
}

// "INIT,COLL" selects, "^SHM" selects all but SHM; default INIT,ENV like NCCL's INIT default.
uint32_t parse_mask(const std::string& v) {
  if (v.empty()) return static_cast<uint32_t>(LogSubsys::Init) | static_cast<uint32_t>(LogSubsys::Env) |
                        static_cast<uint32_t>(LogSubsys::Coll);
  const bool invert = v[0] == '^';
  uint32_t mask = 0;
  size_t pos = invert ? 1 : 0;
  while (pos <= v.size()) {
    size_t end = v.find(',', pos);
    if (end == std::string::npos) end = v.size();
    const std::string tok = v.substr(pos, end - pos);
    for (const auto& s : kSubsysNames)
      if (strcasecmp(tok.c_str(), s.name) == 0) mask |= static_cast<uint32_t>(s.bit);
    pos = end + 1;
  }
  return invert ? ~mask : mask;
}

std::string expand_file_name(const std::string& pattern, const char* host) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '%' && i + 1 < pattern.size()) {
      const char c = pattern[++i];
      if (c == 'h') { out += host; continue; }
      if (c == 'p') { out += std::to_string(getpid()); continue; }
      if (c == '%') { out += '%'; continue; }
      out += '%';
    }
    out += pattern[i];
  }
  return out;
}

void load(LogState& s) {
  const Settings& cfg = settings();
  gethostname(s.host, sizeof s.host - 1);
  if (char* dot = std::strchr(s.host, '.')) *dot = '\0';
  s.mask.store(parse_mask(cfg.debug_subsys));
  if (s.out != stdout && s.out != stderr) std::fclose(s.out);
  s.out = stdout;
  if (!cfg.debug_file.empty()) {
    if (FILE* f = std::fopen(expand_file_name(cfg.debug_file, s.host).c_str(), "w")) s.out = f;
  }
  s.level.store(static_cast<int>(parse_level(cfg.debug)));
}

}  // namespace

void log_set_device(int dev) { t_device = dev; }

void log_reload() {
  LogState& s = state();
  std::lock_guard<std::mutex> lock(s.write_mutex);
  load(s);
}

bool log_enabled(LogLevel level, LogSubsys subsys) {
  LogState& s = state();
  int current = s.level.load(std::memory_order_relaxed);
  if (current < 0) {
    log_reload();
    current = s.level.load();
  }
  if (static_cast<int>(level) > current) return false;
  // WARN and VERSION are shown whatever the subsystem mask says, as NCCL does.
  if (level <= LogLevel::Warn) return true;
  return (s.mask.load(std::memory_order_relaxed) & static_cast<uint32_t>(subsys)) != 0;
}

int log_fd() {
  LogState& s = state();
  if (s.level.load(std::memory_order_relaxed) < 0) log_reload();
  std::lock_guard<std::mutex> lock(s.write_mutex);
  std::fflush(s.out);
  return fileno(s.out);
}

void log_message(LogLevel level, LogSubsys subsys, const char* file, int line, const char* fmt, ...) {
  if (!log_enabled(level, subsys)) return;
  LogState& s = state();
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);

  char dev[16] = "";
  if (t_device >= 0) std::snprintf(dev, sizeof dev, " [%d]", t_device);
  const long tid = syscall(SYS_gettid);
  std::lock_guard<std::mutex> lock(s.write_mutex);
  switch (level) {
    case LogLevel::Warn:
      if (file != nullptr) {
        const char* base = std::strrchr(file, '/');
        std::fprintf(s.out, "\n%s:%d:%ld%s BRAID WARN %s:%d %s\n", s.host, getpid(), tid, dev,
                     base ? base + 1 : file, line, msg);
      } else {
        std::fprintf(s.out, "\n%s:%d:%ld%s BRAID WARN %s\n", s.host, getpid(), tid, dev, msg);
      }
      break;
    case LogLevel::Version:
      std::fprintf(s.out, "%s:%d:%ld%s BRAID VERSION %s\n", s.host, getpid(), tid, dev, msg);
      break;
    case LogLevel::Trace:
      std::fprintf(s.out, "%s:%d:%ld%s BRAID TRACE %s:%d %s\n", s.host, getpid(), tid, dev,
                   file ? file : "", line, msg);
      break;
    default:
      std::fprintf(s.out, "%s:%d:%ld%s BRAID INFO %s\n", s.host, getpid(), tid, dev, msg);
      break;
  }
  std::fflush(s.out);
}

}  // namespace braid
