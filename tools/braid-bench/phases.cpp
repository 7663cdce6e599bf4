#include "phases.h"

#include <algorithm>
#include <barrier>
#include <chrono>

#include "check.h"

namespace braid::bench {

std::optional<std::vector<Phase>> parse_phases(const std::string& text) {
  std::vector<Phase> phases;
  size_t start = 0;
  while (start < text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    const std::string item = text.substr(start, comma - start);
    const size_t colon = item.find(':');
    if (colon == std::string::npos) return std::nullopt;
    const std::string state = item.substr(0, colon);
    if (state != "on" && state != "off") return std::nullopt;
    int calls = 0;
    try {
      calls = std::stoi(item.substr(colon + 1));
    } catch (...) {
      return std::nullopt;
    }
    if (calls < 1) return std::nullopt;
    phases.push_back({state == "on", calls});
    start = comma + 1;
  }
  if (phases.empty()) return std::nullopt;
  return phases;
}

std::vector<PhaseCall> run_phases(RankThreads& threads, BraidPath& braid, const Measure& layout,
                                  const CaseSpec& spec, const std::vector<Phase>& phases, PcieNoise& noise) {
  braid.prepare(spec.type);
  braid.take_splits();
  const uint64_t first_call = braid.split_calls() + 1;
  std::vector<PhaseCall> calls;
  std::barrier sync(threads.size());
  for (size_t p = 0; p < phases.size(); ++p) {
    noise.set(phases[p].noise);
    // Let the background traffic reach full rate (or drain) before the phase starts.
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    for (int i = 0; i < phases[p].calls; ++i) {
      double start = 0, end = 0;
      threads.run_all([&](int rank) {
        sync.arrive_and_wait();
        if (rank == 0) start = now_seconds();
        braid.issue(rank, spec, layout.send_arg(spec, rank), layout.recv_arg(spec, rank));
        BENCH_CUDA(cudaStreamSynchronize(braid.stream(rank)));
        sync.arrive_and_wait();
        if (rank == 0) end = now_seconds();
      });
      calls.push_back({static_cast<int>(p), phases[p].noise, (end - start) * 1e6, -1});
    }
  }
  noise.set(false);
  // Splits settle two calls late: match them to this run's calls by their call number.
  for (const auto& split : braid.take_splits()) {
    if (split.call < first_call || split.call - first_call >= calls.size()) continue;
    calls[split.call - first_call].pcie_share = static_cast<double>(split.pcie_elements) /
                                                static_cast<double>(std::max<size_t>(1, spec.shape.param_count));
  }
  return calls;
}

}  // namespace braid::bench
