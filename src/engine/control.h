// The control segment every rank of a communicator maps: attach count, abort word, one record per
// rank (pid, barrier arrivals, the arguments of its current call) and the progress counters.
// Everything that crosses ranks is a lock-free 64-bit atomic, valid across processes.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace braid::engine {

inline constexpr uint64_t kControlMagic = 0x6272616964637431ull;  // "braidct1"

// What a rank is about to run; compared across ranks before every collective.
struct CallRecord {
  std::atomic<uint64_t> seq;  // which call (1-based); 0: none yet
  std::atomic<uint64_t> collective;
  std::atomic<uint64_t> count;
  std::atomic<uint64_t> dtype;
  std::atomic<uint64_t> op;
  std::atomic<uint64_t> root;
  std::atomic<uint64_t> in_place;  // this rank's buffers alias (NCCL's in-place rule)
  std::atomic<uint64_t> range_begin;  // the elements of every block this call moves
  std::atomic<uint64_t> range_count;
  // PreMulSum's scalar bytes: not compared (NCCL lets each rank bring its own scalar), read by
  // every rank, since a rank's host reductions combine other ranks' raw inputs.
  std::atomic<uint64_t> scalar;
};

// Small host values every rank publishes and reads (Communicator::exchange), by call parity.
inline constexpr int kExchangeSlots = 24;
struct ExchangeRecord {
  std::atomic<uint64_t> seq;
  std::atomic<uint64_t> values[kExchangeSlots];
};

// One monotonic counter on a cache line of its own.
struct alignas(64) PathSignal {
  std::atomic<uint64_t> value;
};
inline constexpr int kPathSignals = 8;

// A rank that fails during set-up writes why here before it raises the abort word naming it, so
// the others fail at once with its cause (a string, NUL-terminated; read only by the one the abort
// word names).
inline constexpr size_t kFailureTextBytes = 1024;

struct alignas(64) RankRecord {
  std::atomic<uint64_t> pid;
  std::atomic<uint64_t> pid_ns;        // its pid namespace (0: unknown): pids compare only within one
  char failure[kFailureTextBytes];
  std::atomic<uint64_t> barrier;       // the last barrier this rank arrived at (monotonic)
  CallRecord calls[2];                 // by call parity: a fast rank never overwrites a record
                                       // a slow rank is still comparing
  ExchangeRecord exchanges[2];         // by exchange parity, for the same reason
  // A second meeting, independent of the first (Communicator::Meeting::Path): a path layered above
  // the engine (braid's copy engines) meets its peers per call on another thread than the one
  // that runs the engine's collectives and exchanges.
  std::atomic<uint64_t> path_barrier;
  ExchangeRecord path_exchanges[2];
  // The executor's own device-side signals (staging ring, end of run). They live here, in the
  // registered segment, because a GPU raises and waits on them with stream memory operations.
  alignas(64) std::atomic<uint64_t> device_staged;
  alignas(64) std::atomic<uint64_t> device_consumed;
  alignas(64) std::atomic<uint64_t> device_finish;
  // The last run whose ranks met: a run's device operations, queued ahead by the calling thread,
  // wait for it before they touch staging (raised by the thread that completes the run).
  alignas(64) std::atomic<uint64_t> device_go;
  // Signals of the paths layered above the engine (each path names its own indices; the engine
  // gives them no meaning). Raised by this rank's GPU, waited on by the peers' GPUs.
  PathSignal path_signals[kPathSignals];
};

// abort word: 0 while healthy; otherwise kAbortTag | reason << 16 | culprit rank.
inline constexpr uint64_t kAbortTag = 1ull << 62;
enum class AbortReason : uint64_t { UserAbort = 1, RankDied = 2, RankStalled = 3, LocalError = 4 };
inline uint64_t abort_word(AbortReason reason, int culprit) {
  return kAbortTag | (static_cast<uint64_t>(reason) << 16) | static_cast<uint64_t>(culprit);
}
inline AbortReason abort_reason(uint64_t word) {
  return static_cast<AbortReason>((word >> 16) & 0xffff);
}
inline int abort_culprit(uint64_t word) { return static_cast<int>(word & 0xffff); }

struct alignas(64) ControlHeader {
  std::atomic<uint64_t> magic;  // set last by the creator: the segment is initialised
  std::atomic<uint64_t> nranks;
  std::atomic<uint64_t> opened;    // ranks that mapped this segment (each then sees a failure posted here)
  std::atomic<uint64_t> attached;  // ranks that mapped every segment
  std::atomic<uint64_t> creator_pid;     // rank 0, for a later start that finds the names left behind
  std::atomic<uint64_t> creator_pid_ns;  // (a rank killed during set-up cannot remove them)
  std::atomic<uint64_t> counter_capacity;
  alignas(64) std::atomic<uint64_t> abort;
};

// Layout: header, nranks rank records, then counter_capacity progress counters.
inline size_t control_bytes(int nranks, size_t counters) {
  return sizeof(ControlHeader) + sizeof(RankRecord) * static_cast<size_t>(nranks) +
         sizeof(std::atomic<uint64_t>) * counters;
}
inline ControlHeader* control_header(void* base) { return static_cast<ControlHeader*>(base); }
inline RankRecord* rank_records(void* base) {
  return reinterpret_cast<RankRecord*>(static_cast<char*>(base) + sizeof(ControlHeader));
}
inline std::atomic<uint64_t>* progress_counters(void* base, int nranks) {
  return reinterpret_cast<std::atomic<uint64_t>*>(static_cast<char*>(base) + sizeof(ControlHeader) +
                                                  sizeof(RankRecord) * static_cast<size_t>(nranks));
}

static_assert(std::atomic<uint64_t>::is_always_lock_free, "shared counters need lock-free atomics");

}  // namespace braid::engine
