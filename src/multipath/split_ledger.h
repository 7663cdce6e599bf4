// The calling thread's half of agreeing on splits without talking (docs/MULTIPATH.md, Agreement):
// the replica of the split table, the split calls issued, and the settled calls applied to the
// table in call order. Call k is split with the times of calls 1 .. k - lag exactly, and the calls
// that get timed are picked by counting calls of each kind, so every rank that issues the same
// calls and applies the same settled times splits every call at the same element. No CUDA here:
// the orchestrator owns the streams and the waiting, this owns the arithmetic (tested on CPU).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "balance/shares.h"
#include "balance/split_table.h"
#include "common/result.h"
#include "common/types.h"

namespace braid::multipath {

// What one split call was, as the ledger needs it back when the call is settled.
struct LedgerCall {
  uint64_t call = 0;  // 1, 2, ... on every rank alike
  Collective collective = Collective::AllReduce;
  DataType type = DataType::Float32;
  size_t bytes = 0;
  balance::Shares used;
  size_t dedicated_elements = 0;  // the NVLink path's (NCCL or braid's copy engines)
  size_t pcie_elements = 0;
  bool timed = false;  // a call with a PCIe share whose paths are timed
};

// A timed call's times as the ranks exchanged them: per rank, its NVLink path's and its PCIe
// path's nanoseconds, or kUnmeasured from a rank that could not time the call. In seconds, in the
// same order, for SplitLedger::apply; empty (the table learns nothing) if any rank sent kUnmeasured,
// so that every rank applies the same samples.
inline constexpr uint64_t kUnmeasured = ~uint64_t{0};
std::vector<double> agreed_seconds(const std::vector<uint64_t>& nanoseconds);

class SplitLedger {
 public:
  // Split offsets are multiples of `align_bytes` (both shares stay page-aligned).
  SplitLedger(std::unique_ptr<balance::SplitTable> table, int nranks, uint64_t lag, size_t align_bytes);

  // The last call whose times must be applied before the next call is split (0: none yet).
  uint64_t must_apply_through() const { return calls_ + 1 > lag_ ? calls_ + 1 - lag_ : 0; }
  // Splits the next call (number calls() + 1) of `count` elements per block. Refused (InternalError)
  // while a call through must_apply_through() is not applied: the split would differ between ranks.
  Result next(Collective c, DataType type, size_t bytes, size_t count, LedgerCall* out);

  // Applies call applied() + 1: `seconds` holds every rank's per-path times (rank-major), or is
  // empty for a call that was not timed (the table learns nothing from it); a call NCCL carried
  // alone needs none. *next_share: the PCIe share the next call of its kind will get. Refused
  // beyond must_apply_through() unless `beyond_lag` (a drain every rank makes at the same call):
  // a table ahead of the lag would split differently from the other ranks'.
  Result apply(const LedgerCall& call, const std::vector<double>& seconds, double* next_share, bool beyond_lag = false);

  uint64_t calls() const { return calls_; }
  uint64_t applied() const { return applied_; }
  balance::SplitTable& table() { return *table_; }
  const balance::SplitTable& table() const { return *table_; }
  void replace_table(std::unique_ptr<balance::SplitTable> table) { table_ = std::move(table); }
  // From the next call on, every call goes whole to the dedicated (NVLink) path, whatever the
  // table says: where braid's PCIe share may not run (paths_admitted.h). Every rank sets it alike.
  void keep_to_dedicated_path() { dedicated_only_ = true; }
  bool dedicated_only() const { return dedicated_only_; }

  // Which split calls of a kind are timed: the first kFirstTimed, then one in kTimeEvery. A
  // timing event costs the calling thread about 1 us more than a plain one (NCCL's end, and the
  // fork where the progress thread cannot time it: bench/host_cost_probe.cu); the balancer needs
  // some calls' times, not every call's.
  static constexpr uint64_t kFirstTimed = 4;
  static constexpr uint64_t kTimeEvery = 4;

 private:
  struct Kind {
    Collective collective;
    DataType type;
    int bucket;
    auto operator<=>(const Kind&) const = default;
  };
  std::unique_ptr<balance::SplitTable> table_;
  bool dedicated_only_ = false;
  int nranks_;
  uint64_t lag_;
  size_t align_bytes_;
  uint64_t calls_ = 0;
  uint64_t applied_ = 0;
  std::map<Kind, uint64_t> with_pcie_;  // split calls with a PCIe share, per kind
};

}  // namespace braid::multipath
