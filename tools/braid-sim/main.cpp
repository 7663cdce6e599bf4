// braid-sim: the simulator the main job runs on a machine without GPUs. For each collective and
// size it generates braid's PCIe program on a bundled (or given) topology, lets the cost model
// choose placement and chunks, and prints the predicted time in nccl-tests' columns beside the
// prediction for a host-staged ring (the shape NCCL's SHM path takes) on the same model.
// Every figure here is a model prediction, never a measurement; the table says so.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "alltoallv.h"
#include "fuselink.h"
#include "versus_nccl.h"
#include "common/result.h"
#include "common/sizes.h"
#include "common/types.h"
#include "plan/cost.h"
#include "plan/generate.h"
#include "shape.h"
#include "topo/topology.h"

namespace {

using namespace braid;


}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"braid-sim: predicted PCIe-path performance of braid's generated programs (cost model)"};
  std::string topo_name = "h200x2";
  std::string min_text = "1M", max_text = "1G";
  double factor = 4;
  int ranks = 0;
  std::string dtype_name = "float";
  std::vector<std::string> collectives = {"all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "alltoall"};
  std::string json_path;
  app.add_option("--topo,-t", topo_name, "bundled topology name or JSON file");
  app.add_option("-b,--minbytes", min_text, "smallest size");
  app.add_option("-e,--maxbytes", max_text, "largest size");
  app.add_option("-f,--stepfactor", factor, "size multiplier");
  app.add_option("-g,--ranks", ranks, "ranks (default: the topology's GPU count)");
  app.add_option("-d,--datatype", dtype_name, "element type");
  app.add_option("-C,--collective", collectives, "collectives to simulate");
  app.add_option("-J,--json", json_path, "also write the rows as JSON");
  sim::AlltoallvArgs a2av;
  CLI::App* alltoallv = app.add_subcommand(
      "alltoallv", "predicted all-to-all(v) time: NCCL-like direct routing against NIMBLE's routing (flow-level model)");
  alltoallv->add_option("--topo,-t", a2av.topo, "bundled topology name or JSON file");
  alltoallv->add_option("--matrix,-m", a2av.matrices,
                        "uniform, zipf:S, hot-expert, permutation, hotspot:R (NIMBLE's hotspot ratio), random");
  alltoallv->add_option("--bytes,-b", a2av.bytes, "mean bytes each rank sends");
  alltoallv->add_option("--relay-efficiency", a2av.relay_efficiency, "share of link capacity a relayed byte gets");
  alltoallv->add_option("--threshold", a2av.threshold, "flows below this size go direct");
  alltoallv->add_option("--seed", a2av.seed, "seed of the random matrices");
  alltoallv->add_flag("--pair", a2av.pair, "one pair's bandwidth with 0, 1, 2, ... relay paths");
  sim::FuseLinkArgs fl;
  CLI::App* fuselink = app.add_subcommand(
      "fuselink", "FuseLink's NIC choice against one NIC per GPU between two servers (flow-level model)");
  fuselink->add_option("--topo,-t", fl.topo, "bundled topology name or JSON file (two servers)");
  fuselink->add_option("--scenario,-s", fl.scenarios, "balanced, hot:K, zipf:S, random, tp:T:A");
  fuselink->add_option("--bytes,-b", fl.bytes, "bytes per sending GPU (the mean for zipf and random)");
  fuselink->add_option("--relay-efficiency", fl.relay_efficiency, "share of NVLink capacity a relayed byte gets");
  fuselink->add_flag("--single", fl.single, "one GPU's bandwidth over 1..8 NICs");
  fuselink->add_flag("--serving", fl.serving, "KV-cache moves arriving at random, P50/P99 per TP degree");
  fuselink->add_option("--load", fl.load, "serving: NIC load with one NIC per GPU, (0, 1)");
  fuselink->add_option("--kv-bytes", fl.kv_bytes, "serving: mean KV cache per request");
  fuselink->add_option("--requests", fl.requests, "serving: requests per instance");
  fuselink->add_option("--seed", fl.seed, "seed of the random scenarios");
  sim::VersusNcclArgs vn;
  CLI::App* versus = app.add_subcommand(
      "versus-nccl", "predicted braid/NCCL ratios on an H200 machine, from the model calibrated to the stored "
                     "measurements, beside the measured ratios");
  versus->add_option("--topo,-t", vn.topo, "bundled topology name or JSON file (h200x2, h200x4, h200x8)");
  versus->add_option("-g,--ranks", vn.ranks, "ranks (default: the topology's GPU count)");
  versus->add_option("-b,--minbytes", vn.min_bytes, "smallest size");
  versus->add_option("-e,--maxbytes", vn.max_bytes, "largest size");
  versus->add_option("-f,--stepfactor", vn.factor, "size multiplier");
  versus->add_option("-C,--collective", vn.collectives, "collectives");
  versus->add_option("--calibration", vn.calibration, "measurements JSON (default: bench/calibration/h200-measured.json)");
  versus->add_option("-J,--json", vn.json_path, "also write the rows as JSON");
  CLI11_PARSE(app, argc, argv);
  if (versus->parsed()) return sim::run_versus_nccl(vn);
  if (alltoallv->parsed()) return sim::run_alltoallv(a2av);
  if (fuselink->parsed()) return sim::run_fuselink(fl);

  topo::Topology t;
  if (topo::load_topology(topo_name, &t) != Result::Success) {
    std::fprintf(stderr, "braid-sim: %s\n", last_error());
    return 2;
  }
  if (ranks <= 0) ranks = t.gpu_count() > 0 ? t.gpu_count() : 2;
  const auto dtype = parse_datatype(dtype_name);
  if (!dtype) {
    std::fprintf(stderr, "braid-sim: unknown data type %s\n", dtype_name.c_str());
    return 2;
  }
  const auto min_parsed = parse_byte_size(min_text), max_parsed = parse_byte_size(max_text);
  if (!min_parsed || !max_parsed) {
    std::fprintf(stderr, "braid-sim: bad size in -b %s / -e %s\n", min_text.c_str(), max_text.c_str());
    return 2;
  }
  const size_t min_bytes = *min_parsed, max_bytes = *max_parsed;

  std::printf("# braid-sim: PREDICTED by the cost model, not measured. topology %s (%s), %d ranks, %s\n",
              t.name.c_str(), topo_name.c_str(), ranks, std::string(datatype_name(*dtype)).c_str());
  std::printf("# ring = a host-staged ring on the same model (the shape of NCCL's SHM path), for comparison\n");
  std::printf("#%11s %12s %8s %12s %6s %7s %10s %8s %8s %10s %8s %7s\n", "size", "count", "type", "collective",
              "place", "chunks", "time(us)", "algbw", "busbw", "ring(us)", "ringbw", "vs ring");
  nlohmann::json rows = nlohmann::json::array();
  for (const std::string& name : collectives) {
    const auto c = parse_collective(name);
    if (!c) {
      std::fprintf(stderr, "braid-sim: unknown collective %s\n", name.c_str());
      return 2;
    }
    for (size_t bytes = min_bytes; bytes <= max_bytes; bytes = static_cast<size_t>(bytes * factor)) {
      plan::PlanChoice best;
      if (plan::choose_plan(*c, ranks, t, bytes, *dtype, &best) != Result::Success) {
        std::fprintf(stderr, "braid-sim: %s\n", last_error());
        return 1;
      }
      double ring_seconds = 0;
      if (*c == Collective::AllReduce || *c == Collective::AllGather) {
        plan::ChooseOptions ro;
        ro.algorithm = plan::GenerateOptions::Algorithm::Ring;
        ro.placement = plan::ReducePlacement::Device;
        plan::PlanChoice ring;
        if (plan::choose_plan(*c, ranks, t, bytes, *dtype, ro, &ring) == Result::Success) ring_seconds = ring.seconds;
      }
      const double algbw = bytes / best.seconds / 1e9;
      const double busbw = algbw * bench::busbw_factor(*c, ranks);
      const size_t count = bytes / datatype_size(*dtype);
      const std::string place = collective_reduces(*c) ? std::string(plan::placement_name(best.placement)) : "-";
      if (ring_seconds > 0) {
        const double ringbw = bytes / ring_seconds / 1e9;
        std::printf(" %11zu %12zu %8s %12s %6s %7d %10.1f %8.2f %8.2f %10.1f %8.2f %6.2fx\n", bytes, count,
                    std::string(datatype_name(*dtype)).c_str(), bench::bench_name(*c).c_str(),
                    place.c_str(), best.chunks, best.seconds * 1e6, algbw, busbw, ring_seconds * 1e6, ringbw, algbw / ringbw);
      } else {
        std::printf(" %11zu %12zu %8s %12s %6s %7d %10.1f %8.2f %8.2f %10s %8s %7s\n", bytes, count,
                    std::string(datatype_name(*dtype)).c_str(), bench::bench_name(*c).c_str(),
                    place.c_str(), best.chunks, best.seconds * 1e6, algbw, busbw, "-", "-", "-");
      }
      rows.push_back({{"collective", bench::bench_name(*c)}, {"size", bytes}, {"count", count},
                      {"type", datatype_name(*dtype)}, {"placement", place},
                      {"chunks", best.chunks}, {"time_us", best.seconds * 1e6}, {"algbw", algbw},
                      {"busbw", busbw}, {"path", "braid-predicted"}, {"ring_time_us", ring_seconds * 1e6}});
      if (bytes == 0 || factor <= 1) break;
    }
  }
  if (!json_path.empty()) {
    std::ofstream f(json_path);
    f << nlohmann::json{{"tool", "braid-sim"}, {"predicted", true}, {"topology", t.name}, {"ranks", ranks},
                        {"rows", rows}}
             .dump(1)
      << "\n";
  }
  return 0;
}
