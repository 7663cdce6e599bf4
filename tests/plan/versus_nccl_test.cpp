// The braid-against-NCCL model (plan/versus_nccl.h) against the stored measurements
// (bench/calibration/h200-measured.json): every measured 2- and 4-GPU ratio within 0.05, fitted
// parameters within what the hardware allows, and predictions for 8 GPUs. The table it prints is
// the one bench/calibration/README.md shows.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "plan/calibration.h"
#include "plan/versus_nccl.h"
#include "topo/topology.h"

namespace braid::plan {
namespace {

const std::string kMeasurements = std::string(BRAID_SOURCE_DIR) + "/bench/calibration/h200-measured.json";

struct Fitted {
  Measurements m;
  ModelParams p;
};

Fitted fitted(const Measurements& m) {
  Fitted f{m, {}};
  EXPECT_EQ(fit_model(f.m, &f.p), Result::Success) << last_error();
  return f;
}

Measurements stored() {
  Measurements m;
  EXPECT_EQ(load_measurements(kMeasurements, &m), Result::Success) << last_error();
  return m;
}

// The sizes a measured ratio covers: its size, or nccl-tests' -f 4 steps across its range.
std::vector<double> sizes_of(const MeasuredRatio& r) {
  std::vector<double> out;
  for (double s = r.size_from; s <= r.size_to; s *= 4) out.push_back(s);
  return out;
}

// How far the model's nccl-tests prediction lies outside each stored ratio (0 inside a range);
// the largest, and each row printed.
double worst_miss(const Fitted& f, bool print) {
  const VersusNcclModel model(f.m, f.p);
  double worst = 0;
  for (const MeasuredRatio& r : f.m.ratios) {
    topo::Topology t;
    EXPECT_EQ(load_machine(r.machine, &t), Result::Success) << last_error();
    for (double size : sizes_of(r)) {
      VersusNccl v;
      EXPECT_EQ(model.predict(r.collective, r.ranks, t, size, Regime::NcclTests, &v), Result::Success)
          << last_error();
      const double miss = std::max({0.0, r.ratio_low - v.ratio, v.ratio - r.ratio_high});
      worst = std::max(worst, miss);
      if (print) {
        char measured[32];
        std::snprintf(measured, sizeof measured, r.ratio_low == r.ratio_high ? "%.2f" : "%.2f-%.2f", r.ratio_low,
                      r.ratio_high);
        std::printf("%-7s %d ranks %-15s %5.0f MiB  predicted %.2f  measured %-9s (%s)%s\n", r.machine.c_str(),
                    r.ranks, std::string(collective_name(r.collective)).c_str(), size / (1 << 20), v.ratio,
                    measured, r.date.c_str(), miss > 0.05 ? "  MISSED" : "");
      }
    }
  }
  return worst;
}

TEST(VersusNccl, EveryMeasuredRatioAtTwoAndFourGpusWithin005) {
  const Fitted f = fitted(stored());
  ASSERT_GE(f.m.ratios.size(), 20u);
  for (int ranks : {2, 4})
    EXPECT_TRUE(std::any_of(f.m.ratios.begin(), f.m.ratios.end(), [&](auto& r) { return r.ranks == ranks; }));
  EXPECT_LE(worst_miss(f, true), 0.05);
}

TEST(VersusNccl, TheCheckFailsWhenAMeasurementMoves) {
  // The comparison is not vacuous: the same model against a ratio moved by 0.1 misses it.
  Measurements m = stored();
  const Fitted f = fitted(m);
  for (auto& r : m.ratios)
    if (r.ranks == 4 && r.size_from == r.size_to) {
      r.ratio_low += 0.1;
      r.ratio_high += 0.1;
      break;
    }
  Fitted moved{m, f.p};
  EXPECT_GT(worst_miss(moved, false), 0.05);
}

TEST(VersusNccl, FittedParametersStayWithinTheHardware) {
  const Fitted f = fitted(stored());
  // Copy engines cannot pull faster than the probe measured (389 GB/s per direction).
  EXPECT_GT(f.p.copy_engine_gbps, 250);
  EXPECT_LE(f.p.copy_engine_gbps, 389);
  EXPECT_GE(f.p.copy_engine_latency_s, 0);
  EXPECT_LT(f.p.copy_engine_latency_s, 100e-6);
  EXPECT_GT(f.p.pcie_efficiency, 0.5);
  EXPECT_LE(f.p.pcie_efficiency, 1.0);
  ASSERT_EQ(f.p.nccl_scaling.size(), 3u);
  for (const auto& s : f.p.nccl_scaling) {
    EXPECT_LT(s.b_inf_gbps, 18 * 26.6) << "NCCL's busbw above NV18's rate";
    EXPECT_GT(s.overhead, 0);
    EXPECT_LT(s.overhead, 2);
  }
}

TEST(VersusNccl, PcieAloneWithinFifteenPercentOfItsMeasurements) {
  const Fitted f = fitted(stored());
  const VersusNcclModel model(f.m, f.p);
  ASSERT_GE(f.m.pcie_alone.size(), 4u);
  for (const auto& a : f.m.pcie_alone) {
    topo::Topology t;
    ASSERT_EQ(load_machine(a.machine, &t), Result::Success);
    double gbps = 0;
    ASSERT_EQ(model.pcie_algbw(a.collective, a.ranks, t, a.size, &gbps), Result::Success) << last_error();
    std::printf("PCIe alone %s %d ranks %s: model %.1f GB/s, measured %.1f\n", a.machine.c_str(), a.ranks,
                std::string(collective_name(a.collective)).c_str(), gbps, a.algbw);
    EXPECT_NEAR(gbps / a.algbw, 1.0, 0.15);
  }
}

TEST(VersusNccl, EightGpusArePredictedFromTheFourGpuCurveAndTheHost) {
  const Fitted f = fitted(stored());
  const VersusNcclModel model(f.m, f.p);
  topo::Topology t;
  ASSERT_EQ(load_machine("h200x8", &t), Result::Success) << last_error();
  ASSERT_EQ(t.gpu_count(), 8);
  for (Collective c : {Collective::AllGather, Collective::AllReduce, Collective::ReduceScatter}) {
    for (double size : {16.0 * (1 << 20), 1.0 * (1 << 30)}) {
      VersusNccl quick, settled;
      ASSERT_EQ(model.predict(c, 8, t, size, Regime::NcclTests, &quick), Result::Success) << last_error();
      ASSERT_EQ(model.predict(c, 8, t, size, Regime::Settled, &settled), Result::Success) << last_error();
      EXPECT_FALSE(quick.nccl_measured);
      EXPECT_FALSE(quick.copy_engines) << "braid's own NVLink path runs at two ranks only";
      EXPECT_NEAR(quick.ratio, 1.0, 0.01);
      if (size < f.p.facts.split_min_bytes) {
        EXPECT_DOUBLE_EQ(settled.ratio, 1.0) << "below the split threshold braid passes the call to NCCL";
      } else {
        EXPECT_GT(settled.pcie_share, 0);
        EXPECT_GT(settled.ratio, 1.0);
        EXPECT_LT(settled.ratio, 1.2);
      }
    }
  }
}

TEST(VersusNccl, RefusesMachinesWhoseNvlinkWasNotMeasured) {
  const Measurements m = stored();
  for (const char* name : {"h200x2", "h200x4", "h200x8"}) {
    topo::Topology t;
    ASSERT_EQ(load_machine(name, &t), Result::Success);
    EXPECT_EQ(check_calibrated_for(m, t), Result::Success) << name << ": " << last_error();
  }
  for (const char* name : {"hylink-3090x4", "flexlink-h800x8"}) {
    topo::Topology t;
    ASSERT_EQ(load_machine(name, &t), Result::Success);
    EXPECT_EQ(check_calibrated_for(m, t), Result::InvalidArgument) << name;
  }
}

}  // namespace
}  // namespace braid::plan
