// The measurements braid's braid-against-NCCL model is calibrated to (bench/calibration/*.json):
// braid/NCCL ratios and NCCL's busbw by size from nccl-tests on H200 machines, braid's PCIe path
// alone, and a few facts of the code (its split thresholds) and of runs (how many split calls
// carried a PCIe share). The model's parameters are fitted from them here, never set by hand.
#pragma once

#include <string>
#include <vector>

#include "common/result.h"
#include "common/types.h"

namespace braid::plan {

// NCCL's own busbw against size for one collective at one rank count, measured on `machine`.
struct NcclCurve {
  std::string machine;
  int ranks = 0;
  Collective collective = Collective::AllReduce;
  std::vector<double> sizes;  // bytes, as nccl-tests counts them, ascending
  std::vector<double> busbw;  // GB/s
  std::string source;

  // Interpolated linearly in log(size), the end values kept beyond the measured range.
  double busbw_at(double bytes) const;
};

// A measured braid/NCCL busbw ratio: at one size (ratio_low == ratio_high unless the source gave
// a range), or a range of ratios over sizes [size_from, size_to].
struct MeasuredRatio {
  std::string machine;  // the bundled topology the machine is
  int ranks = 0;
  Collective collective = Collective::AllReduce;
  double size_from = 0, size_to = 0;
  double ratio_low = 0, ratio_high = 0;
  double nccl_busbw = 0;  // NCCL's busbw in the same call, 0 where not given
  std::string date, source;
};

// braid's PCIe path alone (NCCL idle), algbw GB/s.
struct PcieAloneMeasurement {
  std::string machine;
  int ranks = 0;
  Collective collective = Collective::AllReduce;
  double size = 0;
  double algbw = 0;
  std::string date, source;
};

struct CalibrationFacts {
  double pcie_fixed_seconds = 0;        // the PCIe share's fixed cost per call
  double nccltests_split_fraction = 0;  // split calls that carried a PCIe share in nccl-tests
  double probe_share = 0;               // HyLink's probe share
  double split_min_bytes = 0;           // a PCIe share from this size on
  double nvlink_copy_min_bytes = 0;     // braid's copy-engine AllGather from this size (2 ranks)
  double nvlink_allreduce_min_bytes = 0;  // braid's NVLink AllReduce from this size (2 ranks)
};

struct Measurements {
  std::vector<MeasuredRatio> ratios;       // checked against the model
  std::vector<MeasuredRatio> other_runs;   // the spread of other runs; not checked
  std::vector<NcclCurve> nccl_curves;
  std::vector<PcieAloneMeasurement> pcie_alone;
  CalibrationFacts facts;
  std::string path;
  // The span of the dates of `ratios` ("2026-11-26 to 2026-11-28").
  std::string date_span() const;
};

Result load_measurements(const std::string& path, Measurements* out);
// The bundled file (the source tree's bench/calibration/, or the installed package's).
std::string default_measurements_path();

// NCCL's asymptotic busbw at n ranks, B(n) = b_inf * (1 - overhead / n): a ring's per-GPU
// NVLink efficiency rising with the ranks that share its steps, fitted from two rank counts.
struct NcclRankScaling {
  Collective collective = Collective::AllReduce;
  double b_inf_gbps = 0;
  double overhead = 0;
  double busbw(int ranks) const { return b_inf_gbps * (1 - overhead / ranks); }
};

// The model's physical parameters, every one fitted or read from the Measurements.
struct ModelParams {
  // braid's copy-engine NVLink path (two ranks): each GPU's inbound bytes at this rate, plus a
  // fixed time per call; fitted to braid's measured times where that path carried the calls.
  double copy_engine_gbps = 0;
  double copy_engine_latency_s = 0;
  // braid's PCIe path runs at this fraction of the cost model's time for its program on the
  // topology (links, host memory), fitted to the PCIe-path-alone measurements.
  double pcie_efficiency = 0;
  std::vector<NcclRankScaling> nccl_scaling;
  CalibrationFacts facts;
};

// Fits ModelParams from the measurements (topologies by the machine names).
Result fit_model(const Measurements& m, ModelParams* out);

}  // namespace braid::plan
