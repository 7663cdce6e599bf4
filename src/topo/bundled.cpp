// Bundled topologies: <dir>/<name>.json in BRAID_TOPO_DIR, then the topologies/ folder installed
// beside the binary (the pip package's braid/topologies), then the source tree's topologies/.
#include <dlfcn.h>

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "common/settings.h"
#include "topo/topology.h"

namespace braid::topo {
namespace {

namespace fs = std::filesystem;

// <folder of the binary holding this code>/../topologies, for the executable and for a shared
// library (libbraid.so) alike: an installed package finds its topologies wherever it was put.
std::vector<std::string> installed_dirs() {
  std::vector<fs::path> binaries;
  Dl_info info{};
  if (dladdr(reinterpret_cast<const void*>(&installed_dirs), &info) != 0 && info.dli_fname != nullptr)
    binaries.emplace_back(info.dli_fname);
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) binaries.push_back(exe);
  std::vector<std::string> dirs;
  for (const fs::path& binary : binaries) {
    const fs::path dir = fs::absolute(binary, ec).parent_path().parent_path() / "topologies";
    if (!ec && fs::is_directory(dir, ec)) dirs.push_back(fs::weakly_canonical(dir, ec).string());
  }
  return dirs;
}

std::vector<std::string> search_dirs() {
  std::vector<std::string> dirs;
  if (!settings().topo_dir.empty()) dirs.push_back(settings().topo_dir);
  for (std::string& dir : installed_dirs())
    if (std::find(dirs.begin(), dirs.end(), dir) == dirs.end()) dirs.push_back(std::move(dir));
  dirs.push_back(BRAID_TOPOLOGY_DIR);
  return dirs;
}

bool looks_like_path(const std::string& text) {
  return text.find('/') != std::string::npos ||
         (text.size() > 5 && text.compare(text.size() - 5, 5, ".json") == 0);
}

}  // namespace

std::vector<std::string> bundled_topologies() {
  std::vector<std::string> names;
  for (const std::string& dir : search_dirs()) {
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      const fs::path& p = it->path();
      if (p.extension() == ".json" && it->is_regular_file(ec)) names.push_back(p.stem().string());
    }
  }
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

Result load_topology(const std::string& name_or_path, Topology* out) {
  if (name_or_path.empty()) return fail(Result::InvalidArgument, "topology: empty name");
  if (looks_like_path(name_or_path)) return load_topology_file(name_or_path, out);
  for (const std::string& dir : search_dirs()) {
    fs::path candidate = fs::path(dir) / (name_or_path + ".json");
    std::error_code ec;
    if (fs::is_regular_file(candidate, ec)) return load_topology_file(candidate.string(), out);
  }
  std::error_code ec;
  if (fs::is_regular_file(name_or_path, ec)) return load_topology_file(name_or_path, out);
  std::string known;
  for (const std::string& n : bundled_topologies()) known += (known.empty() ? "" : ", ") + n;
  return fail(Result::InvalidArgument, "topology: '%s' is neither a bundled topology (%s) nor a file",
              name_or_path.c_str(), known.c_str());
}

}  // namespace braid::topo
