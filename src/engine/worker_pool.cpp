#include "engine/worker_pool.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <cstring>
#include <system_error>

#include "common/log.h"
#include "common/thread_stacks.h"

namespace braid::engine {

Result parse_cpu_list(const std::string& text, std::vector<int>* cpus) {
  cpus->clear();
  size_t pos = 0;
  auto number = [&](int* value) {
    size_t start = pos;
    long v = 0;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
      v = v * 10 + (text[pos] - '0');
      if (v > 1 << 20) return false;
      ++pos;
    }
    *value = static_cast<int>(v);
    return pos > start;
  };
  while (pos < text.size()) {
    int first = 0, last = 0;
    if (!number(&first))
      return fail(Result::InvalidArgument, "BRAID_CPU_LIST '%s': expected a core number at %zu",
                  text.c_str(), pos);
    last = first;
    if (pos < text.size() && text[pos] == '-') {
      ++pos;
      if (!number(&last) || last < first)
        return fail(Result::InvalidArgument, "BRAID_CPU_LIST '%s': bad range at %zu",
                    text.c_str(), pos);
    }
    for (int c = first; c <= last; ++c) cpus->push_back(c);
    if (pos < text.size()) {
      if (text[pos] != ',')
        return fail(Result::InvalidArgument, "BRAID_CPU_LIST '%s': unexpected '%c' at %zu",
                    text.c_str(), text[pos], pos);
      ++pos;
    }
  }
  return Result::Success;
}

WorkerCores workers_for(int cores, int sharing, int slot, const std::vector<int>& cpus) {
  // The calling thread, braid's progress thread and NCCL's proxy thread (busy on network
  // transports, as on the one-GPU rig where every rank is a node of its own).
  constexpr int kCallerProgressAndProxy = 3;
  constexpr int kMostWorkers = 8;
  sharing = std::max(1, sharing);
  const int slice = std::max(1, cores / sharing);
  WorkerCores out;
  out.threads = std::clamp(slice - kCallerProgressAndProxy, 1, kMostWorkers);
  if (cpus.empty()) return out;
  const size_t first = static_cast<size_t>(std::clamp(slot, 0, sharing - 1)) * static_cast<size_t>(slice);
  for (int i = 0; i < out.threads; ++i) out.cpus.push_back(cpus[(first + static_cast<size_t>(i)) % cpus.size()]);
  return out;
}

Result WorkerPool::create(int threads, std::vector<int> cpus, std::unique_ptr<WorkerPool>* out) {
  std::unique_ptr<WorkerPool> pool(new WorkerPool());
  threads = std::max(threads, 1);
  for (int i = 0; i < threads; ++i) {
    auto w = std::make_unique<Worker>();
    const int cpu = cpus.empty() ? -1 : cpus[static_cast<size_t>(i) % cpus.size()];
    try {
      w->thread = std::thread([p = pool.get(), w = w.get(), cpu] { p->run(w, cpu); });
    } catch (const std::system_error& e) {
      // The destructor stops and joins the workers started so far.
      return fail(Result::SystemError, "could not start worker thread %d of %d: %s (BRAID_THREADS sets how many)",
                  i + 1, threads, e.what());
    }
    pool->workers_.push_back(std::move(w));
  }
  *out = std::move(pool);
  return Result::Success;
}

WorkerPool::~WorkerPool() {
  shutdown_.store(true);
  for (auto& w : workers_) {
    {
      std::lock_guard lock(w->mutex);
    }
    w->wake.notify_all();
  }
  for (auto& w : workers_) w->thread.join();
}

void WorkerPool::submit(int worker, Task task) {
  Worker& w = *workers_[static_cast<size_t>(worker) % workers_.size()];
  outstanding_.fetch_add(1);
  {
    std::lock_guard lock(w.mutex);
    w.tasks.push_back(std::move(task));
  }
  w.wake.notify_one();
}

void WorkerPool::drop_pending() {
  for (auto& w : workers_) {
    long dropped = 0;
    {
      std::lock_guard lock(w->mutex);
      dropped = static_cast<long>(w->tasks.size());
      w->tasks.clear();
    }
    if (dropped > 0 && outstanding_.fetch_sub(dropped) == dropped) {
      std::lock_guard lock(idle_mutex_);
      idle_.notify_all();
    }
  }
}

void WorkerPool::wait_idle() {
  std::unique_lock lock(idle_mutex_);
  idle_.wait(lock, [&] { return outstanding_.load() == 0; });
}

void WorkerPool::run(Worker* w, int cpu) {
  name_this_thread("braid-reduce");
  if (cpu >= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    int rc = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
    if (rc == 0) {
      pinned_.fetch_add(1);
    } else {
      BRAID_INFO(Engine, "could not pin a worker to core %d (%s); running unpinned", cpu,
                 strerror(rc));
    }
  }
  for (;;) {
    Task task;
    {
      std::unique_lock lock(w->mutex);
      w->wake.wait(lock, [&] { return shutdown_.load() || !w->tasks.empty(); });
      if (shutdown_.load()) return;
      task = std::move(w->tasks.front());
      w->tasks.pop_front();
    }
    task();
    if (outstanding_.fetch_sub(1) == 1) {
      std::lock_guard lock(idle_mutex_);
      idle_.notify_all();
    }
  }
}

}  // namespace braid::engine
