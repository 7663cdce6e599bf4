// braid against NCCL on NVLink machines, as a model: NCCL alone runs at its measured busbw curve
// (scaled from the nearest measured rank count where none was measured); braid runs NCCL's share
// (or, at two ranks, its own copy-engine path for AllGather and AllReduce) beside its PCIe share,
// split as the balancer aims to (equal finishing times) from its split threshold on. The PCIe
// share's time is the cost model's for braid's program on the topology (links and host memory
// shared by every GPU), scaled by a fitted efficiency, plus its fixed cost per call.
// bench/calibration/README.md says what is measured, what is fitted and what is assumed.
#pragma once

#include <string>

#include "common/result.h"
#include "common/types.h"
#include "plan/calibration.h"
#include "topo/topology.h"

namespace braid::plan {

enum class Regime {
  // As nccl-tests measures braid: a few dozen calls per size, fewer than the calls it takes the
  // balancer's times to come back (BRAID_SPLIT_SETTLE_LAG), so almost every split call goes to
  // the NVLink path alone (the measured fraction carries a probe share).
  NcclTests,
  // A long run (training): every split call at the balancer's settled split.
  Settled,
};

struct VersusNccl {
  double nccl_seconds = 0;
  double nccl_busbw = 0;
  bool nccl_measured = false;  // NCCL's curve at this rank count was measured (else scaled)
  double braid_seconds = 0;
  double ratio = 0;            // nccl_seconds / braid_seconds (= braid/NCCL busbw)
  double pcie_share = 0;       // the settled split's PCIe fraction (0 where braid does not split)
  double pcie_algbw = 0;       // the PCIe path's own rate for this call (GB/s), 0 if unused
  bool copy_engines = false;   // braid's own NVLink path carries the NVLink share
};

class VersusNcclModel {
 public:
  VersusNcclModel(const Measurements& measurements, const ModelParams& params)
      : m_(measurements), p_(params) {}

  // `bytes` is nccl-tests' size of the call.
  Result predict(Collective collective, int ranks, const topo::Topology& topology, double bytes,
                 Regime regime, VersusNccl* out) const;
  // NCCL alone: seconds of a call; sets *measured when the rank count's curve was measured.
  Result nccl_seconds(Collective collective, int ranks, double bytes, double* seconds,
                      bool* measured = nullptr) const;
  // braid's PCIe path alone: algbw (GB/s) the model gives for a call of `bytes`.
  Result pcie_algbw(Collective collective, int ranks, const topo::Topology& topology, double bytes,
                    double* gbps) const;

 private:
  const Measurements& m_;
  const ModelParams& p_;
};

// The topology a measured machine name refers to, loaded (bundled topologies by name).
Result load_machine(const std::string& machine, topo::Topology* out);

// Fails unless every GPU of `topology` has the NVLink rate of the machines NCCL's curves were
// measured on (within 5%): those curves say nothing of other GPUs.
Result check_calibrated_for(const Measurements& m, const topo::Topology& topology);

}  // namespace braid::plan
