// braid-plan: generate a collective's PCIe program for a topology, print it with the cost model's
// prediction, and prove it with the validator.
//   braid-plan allreduce --ranks 4 --topo hylink-3090x4 [--placement host|device|auto]
//              [--chunks N] [--algorithm hierarchical|ring|auto] [--bytes 64M] [--dtype float]
//              [--root R] [--deterministic] [--in-place] [--cost-only]
//   braid-plan --list-topologies
//   braid-plan --show-topology [--topo NAME]   the topology as JSON (default: this machine's)
//   braid-plan --show-settings                 every BRAID_* setting as JSON: the value set, braid's
//                                              reading of it, refused or not; unknown BRAID_* names
//   braid-plan --show-shm                      /dev/shm against braid's need, and braid's files in it
//   braid-plan --show-split-policy [--ranks N] [--nvlink yes|no|auto]
//                                              from which size each collective takes which of
//                                              braid's paths, by the drop-in's own rules
// The last four are what `braid doctor` reads (python/braid/doctor.py).
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstdio>
#include <optional>
#include <string>

#include "common/settings.h"
#include "common/sizes.h"
#include "device/backend.h"
#include "dsl/text.h"
#include "engine/communicator.h"
#include "engine/shm.h"
#include "engine/stale_segments.h"
#include "dsl/validator.h"
#include "multipath/orchestrator_options.h"
#include "multipath/paths_admitted.h"
#include "peer/body_graphs.h"
#include "plan/cost.h"
#include "plan/generate.h"
#include "topo/topology.h"

namespace {

using namespace braid;


std::string join(const std::vector<int>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? " " : "") + std::to_string(v[i]);
  return s;
}

// A description's headline for a listing: the text before its first ": " (every bundled one starts
// "what: figures"), at most `width` characters, cut between words.
std::string headline(const std::string& description, size_t width) {
  std::string head = description.substr(0, description.find(": "));
  if (head.size() <= width) return head;
  const size_t space = head.rfind(' ', width - 3);
  return head.substr(0, space == std::string::npos ? width - 3 : space) + "...";
}

// nccl-tests' algbw: the message size (whole output for the gathering collectives) per second.
double algbw_gbps(size_t bytes, double seconds) { return seconds > 0 ? bytes / seconds / 1e9 : 0; }

// The settings table with each variable's value where the environment sets it: the text as
// typed, what braid makes of it (the library's own parse) and whether braid refuses it; then every
// BRAID_* variable braid's tools read (type Tool) or that braid does not know (type Unknown, with the
// nearest name it knows).
std::string settings_json() {
  nlohmann::json rows = nlohmann::json::array();
  for (const SettingInfo& s : setting_table()) {
    // The table keeps each default as written in settings_table.inc: strings in quotes.
    std::string def = s.default_text;
    if (def.size() >= 2 && def.front() == '"' && def.back() == '"') def = def.substr(1, def.size() - 2);
    nlohmann::json row = {{"name", s.env_name}, {"type", s.type}, {"default", def},
                          {"description", s.description}};
    if (s.ranged) row["range"] = {s.min, s.max};
    if (const char* value = std::getenv(s.env_name)) {
      const SettingParse parsed = parse_setting(s, value);
      row["value"] = value;
      row["parsed"] = parsed.value;
      row["refused"] = !parsed.accepted;
      if (!parsed.accepted) row["reason"] = parsed.reason;
    }
    rows.push_back(row);
  }
  // Names braid's tools and Python package read themselves (BRAID_BUILD_DIR, ...), where set.
  for (const std::string& name : known_setting_names()) {
    const bool in_table = std::any_of(setting_table().begin(), setting_table().end(),
                                      [&](const SettingInfo& s) { return name == s.env_name; });
    if (const char* value = std::getenv(name.c_str()); value != nullptr && !in_table)
      rows.push_back({{"name", name}, {"type", "Tool"}, {"value", value}});
  }
  for (const UnknownSetting& u : unknown_settings())
    rows.push_back({{"name", u.name}, {"type", "Unknown"}, {"value", std::getenv(u.name.c_str())}, {"nearest", u.nearest}});
  return rows.dump(1, ' ', false, nlohmann::json::error_handler_t::replace);  // any bytes a variable holds
}

// /dev/shm against what the drop-in will allocate there per communicator, at its rank 0: the
// meetings' control segment, and with the PCIe share's engine another one and its staging
// (BRAID_STAGING_BYTES, else the CUDA backend's, per NUMA node); and the braid files in it, stale
// ones marked: what `braid doctor` reports.
std::string shm_json(const topo::Topology& machine) {
  engine::ShmSpace space;
  const bool known = engine::shm_space(&space);
  const int gpus = std::max(2, machine.gpu_count());
  const int numa = std::max<int>(1, static_cast<int>(machine.numa_nodes().size()));
  const int64_t set = settings().staging_bytes;
  const auto need = [&](size_t staging) {
    return engine::shm_bytes_needed(gpus, 0, 0) + engine::shm_bytes_needed(gpus, numa, set > 0 ? size_t(set) : staging);
  };
  nlohmann::json files = nlohmann::json::array();
  for (const engine::ShmFile& f : engine::braid_shm_files())
    files.push_back({{"name", f.name}, {"bytes", f.bytes}, {"owner", f.owner}, {"engine", f.engine}, {"stale", f.stale},
                     {"state", f.state}});
  nlohmann::json out = {{"dir", engine::kShmDir}, {"known", known}, {"size", space.size}, {"free", space.free},
                        {"ranks", gpus}, {"numa_nodes", numa}, {"staging_bytes_set", set},
                        {"need", need(device::Backend::kPinnedStagingBytes)}, {"files", files}};
  return out.dump(1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// From which size each collective the drop-in splits takes braid's PCIe share and braid's copy-engine
// NVLink path, on a communicator of `ranks` on a machine with or without NVLink, by the library's own
// rules (multipath/paths_admitted.h, OrchestratorOptions): what `braid doctor` prints.
std::string split_policy_json(int ranks, bool nvlink) {
  const multipath::OrchestratorOptions options = multipath::OrchestratorOptions::from_settings();
  const multipath::PathThresholds thresholds = options.thresholds(nvlink);
  const multipath::PathsAdmitted paths = multipath::admit_paths(options.facts(ranks, nvlink));
  const auto path = [](multipath::PathRefusal why) {
    return nlohmann::json{{"admitted", why == multipath::PathRefusal::None},
                          {"why", std::string(multipath::refusal_text(why))}};
  };
  nlohmann::json rules = nlohmann::json::array();
  for (const Collective c : {Collective::AllReduce, Collective::AllGather, Collective::ReduceScatter,
                             Collective::Broadcast, Collective::Reduce}) {
    const size_t copy_from = multipath::copy_engines_from(thresholds, c);
    rules.push_back({{"collective", std::string(collective_name(c))},
                     {"pcie_from", paths.pcie_share_admitted() ? nlohmann::json(thresholds.pcie_share) : nlohmann::json()},
                     {"nvlink_path_from", paths.copy_engines_admitted() && copy_from > 0 ? nlohmann::json(copy_from)
                                                                                         : nlohmann::json()}});
  }
  // What each path holds per communicator once it carries data (the INIT and INFO lines say what
  // was made): the copy engines' AllReduce pull scratch and graphs of calls; the PCIe share's
  // threads (its pinned staging is --show-shm's).
  const nlohmann::json holds = {
      {"copy_engines", {{"pull_scratch_bytes", settings().nvlink_scratch_bytes},
                        {"pull_from_bytes", settings().nvlink_pull_min_bytes},
                        {"graphs_max", settings().nvlink_body_graphs ? peer::BodyGraphCache::kDefaultCapacity : size_t{0}}}},
      {"pcie_share", {{"progress_threads", 1}, {"worker_threads", settings().threads}}}};
  const nlohmann::json out = {{"ranks", ranks}, {"nvlink", nvlink}, {"disabled", settings().disable},
                              {"copy_engines", path(paths.copy_engines)}, {"pcie_share", path(paths.pcie_share)},
                              {"rules", rules}, {"holds", holds}};
  return out.dump(1);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Generate, cost and validate a braid PCIe collective program"};
  std::string collective_text;
  int ranks = 0;
  std::string topo_name;
  std::string placement_text = "auto";
  int chunks = 0;
  std::string algorithm_text = "hierarchical";
  std::string bytes_text = "64M";
  std::string dtype_text = "float";
  int root = 0;
  bool deterministic = false, in_place = false, cost_only = false, list_topologies = false;
  bool show_topology = false, show_settings = false, show_shm = false, show_split_policy = false;
  std::string nvlink_text = "auto";
  app.add_option("collective", collective_text, "allreduce, allgather, reducescatter, broadcast, reduce or alltoall");
  app.add_option("--ranks", ranks, "Number of ranks (default: the topology's GPU count)")->check(CLI::Range(1, 65536));
  app.add_option("--topo", topo_name, "Bundled topology name or JSON file (default: discover this machine)");
  app.add_option("--placement", placement_text, "Where reductions run: host, device or auto")
      ->check(CLI::IsMember({"host", "device", "auto"}));
  app.add_option("--chunks", chunks, "Chunks per block (0: the cost model chooses)")->check(CLI::Range(0, 65536));
  app.add_option("--algorithm", algorithm_text, "hierarchical, ring or auto (the cost model chooses)")
      ->check(CLI::IsMember({"hierarchical", "ring", "auto"}));
  app.add_option("--bytes", bytes_text, "Message size as nccl-tests counts it, e.g. 64M, 1G");
  app.add_option("--dtype", dtype_text, "Element type (float, half, bfloat16, int32, ...)");
  app.add_option("--root", root, "Root rank of broadcast and reduce");
  app.add_flag("--deterministic", deterministic, "Host reductions as a strict chain in rank order");
  app.add_flag("--in-place", in_place, "Validate with NCCL's in-place buffer aliasing");
  app.add_flag("--cost-only", cost_only, "Print only the cost summary, not the program");
  app.add_flag("--list-topologies", list_topologies, "List the bundled topologies and exit");
  app.add_flag("--show-topology", show_topology,
               "Print the topology (--topo, default this machine's, discovered) as JSON and exit");
  app.add_flag("--show-settings", show_settings, "Print every BRAID_* setting and its value as JSON and exit");
  app.add_flag("--show-shm", show_shm,
               "Print /dev/shm's size and free space, what braid's set-up needs there (this machine's GPUs "
               "and NUMA nodes) and the braid files in it, stale ones marked, as JSON and exit");
  app.add_flag("--show-split-policy", show_split_policy,
               "Print from which size each collective takes which of braid's paths (--ranks, default this "
               "machine's GPUs; --nvlink) by the drop-in's rules and settings, as JSON and exit");
  app.add_option("--nvlink", nvlink_text, "With --show-split-policy: yes, no or auto (this machine's topology)")
      ->check(CLI::IsMember({"yes", "no", "auto"}));
  CLI11_PARSE(app, argc, argv);

  if (show_split_policy) {
    // This machine is discovered only where it decides something (doctor gives both).
    topo::Topology machine;
    const bool found = (nvlink_text == "auto" || ranks <= 0) && topo::discover_topology(&machine) == Result::Success;
    const bool nvlink = nvlink_text == "auto" ? found && machine.has_nvlink() : nvlink_text == "yes";
    std::printf("%s\n", split_policy_json(ranks > 0 ? ranks : (found ? machine.gpu_count() : 0), nvlink).c_str());
    return 0;
  }

  if (show_shm) {
    topo::Topology machine;
    if (topo::discover_topology(&machine) != Result::Success) machine = topo::Topology{};
    std::printf("%s\n", shm_json(machine).c_str());
    return 0;
  }

  if (show_settings) {
    std::printf("%s\n", settings_json().c_str());
    return 0;
  }
  if (show_topology) {
    topo::Topology shown;
    const Result r = topo_name.empty() ? topo::discover_topology(&shown) : topo::load_topology(topo_name, &shown);
    if (r != Result::Success) {
      std::fprintf(stderr, "braid-plan: no topology: %s\n", last_error());
      return 2;
    }
    std::printf("%s\n", topo::save_topology_json(shown).c_str());
    return 0;
  }

  if (list_topologies) {
    for (const auto& name : topo::bundled_topologies()) {
      topo::Topology t;
      if (topo::load_topology(name, &t) == Result::Success)
        std::printf("%-22s %2d GPUs %2zu NUMA  %s\n", name.c_str(), t.gpu_count(), t.numa_nodes().size(),
                    headline(t.description, 70).c_str());
      else
        std::printf("%-22s (does not load: %s)\n", name.c_str(), last_error());
    }
    std::printf("(braid plan --show-topology --topo NAME prints one in full)\n");
    return 0;
  }
  const auto collective = parse_collective(collective_text);
  if (!collective) {
    std::fprintf(stderr, "braid-plan: unknown collective '%s' (try allreduce, allgather, reducescatter, "
                 "broadcast, reduce, alltoall)\n", collective_text.c_str());
    return 2;
  }
  const auto dtype = parse_datatype(dtype_text);
  if (!dtype) {
    std::fprintf(stderr, "braid-plan: unknown dtype '%s'\n", dtype_text.c_str());
    return 2;
  }
  const auto bytes = parse_byte_size(bytes_text);
  if (!bytes || *bytes == 0) {
    std::fprintf(stderr, "braid-plan: cannot read --bytes '%s' (e.g. 4096, 64M, 1G)\n", bytes_text.c_str());
    return 2;
  }
  topo::Topology topology;
  const Result loaded = topo_name.empty() ? topo::discover_topology(&topology) : topo::load_topology(topo_name, &topology);
  if (loaded != Result::Success) {
    std::fprintf(stderr, "braid-plan: no topology: %s\n", last_error());
    return 2;
  }
  if (ranks == 0) ranks = std::max(1, topology.gpu_count());

  plan::GenerateOptions options;
  options.placement = placement_text == "host"     ? plan::ReducePlacement::Host
                      : placement_text == "device" ? plan::ReducePlacement::Device
                                                   : plan::ReducePlacement::Auto;
  options.chunks = chunks;
  options.algorithm = algorithm_text == "ring"   ? plan::GenerateOptions::Algorithm::Ring
                      : algorithm_text == "auto" ? plan::GenerateOptions::Algorithm::Auto
                                                 : plan::GenerateOptions::Algorithm::Hierarchical;
  options.deterministic = deterministic;
  options.root = root;
  options.bytes = *bytes;
  options.dtype = *dtype;
  // Resolve the choices here so the summary can say what was chosen.
  if (plan::resolve_choices(*collective, ranks, topology, &options) != Result::Success) {
    std::fprintf(stderr, "braid-plan: %s\n", last_error());
    return 2;
  }
  dsl::Program program;
  if (plan::generate(*collective, ranks, topology, options, &program) != Result::Success) {
    std::fprintf(stderr, "braid-plan: %s\n", last_error());
    return 2;
  }
  const size_t count = plan::count_for_bytes(*collective, ranks, *bytes, *dtype);
  plan::ProgramCost cost;
  if (plan::estimate(program, topology, count, *dtype, plan::CostOptions{}, &cost) != Result::Success) {
    std::fprintf(stderr, "braid-plan: cost model: %s\n", last_error());
    return 2;
  }
  if (!cost_only) std::fputs(dsl::print_program(program).c_str(), stdout);

  size_t instructions = 0;
  for (const auto& list : program.rank_instructions) instructions += list.size();
  std::printf("# topology %s, %d ranks, %s, placement %s, %d chunks, %zu instructions\n",
              topology.name.c_str(), ranks, std::string(plan::algorithm_name(options.algorithm)).c_str(),
              std::string(plan::placement_name(options.placement)).c_str(), program.chunks, instructions);
  std::printf("# message %zu bytes (count %zu %s): predicted %.1f us (transfer %.1f us, pipeline %.1f us over %d "
              "dependent instructions), algbw %.2f GB/s\n",
              *bytes, count, std::string(datatype_name(*dtype)).c_str(), cost.seconds * 1e6,
              cost.transfer_seconds * 1e6, cost.pipeline_seconds * 1e6, cost.critical_path,
              algbw_gbps(*bytes, cost.seconds));
  std::printf("# bottleneck: %s\n", cost.bottleneck.c_str());
  std::printf("# uploads per GPU (chunks): %s (total %d)\n", join(cost.uploads_per_gpu).c_str(), cost.uploads);
  std::printf("# downloads per GPU (chunks): %s (total %d)\n", join(cost.downloads_per_gpu).c_str(), cost.downloads);
  std::printf("# inter-socket crossings: %d chunks; network crossings: %d chunks; host reduce %.1f MB\n",
              cost.inter_socket_crossings, cost.network_crossings, cost.host_reduce_bytes / 1e6);

  dsl::ValidateOptions vo;
  vo.in_place = in_place;
  const dsl::ValidationReport report = dsl::validate(program, vo);
  if (!report.ok) {
    std::printf("# INVALID (%s): rank %d instruction %d: %s\n", in_place ? "in-place" : "out-of-place",
                report.rank, report.instruction, report.message.c_str());
    return 1;
  }
  std::printf("# valid (%s)\n", in_place ? "in-place" : "out-of-place");
  return 0;
}
