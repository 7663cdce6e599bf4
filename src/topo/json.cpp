// Topology files: JSON in which nodes name each other; ids are positions in "nodes".
#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "topo/names.h"
#include "topo/topology.h"

namespace braid::topo {
namespace {

using nlohmann::json;

// Reads an optional number field; absent or null leaves *out as is.
Result read_number(const json& obj, const char* field, const std::string& where, double* out) {
  auto it = obj.find(field);
  if (it == obj.end() || it->is_null()) return Result::Success;
  if (!it->is_number())
    return fail(Result::InvalidArgument, "topology: %s: field '%s' must be a number", where.c_str(), field);
  *out = it->get<double>();
  return Result::Success;
}

Result read_capacity(const json& obj, const char* field, const std::string& where, double* out) {
  BRAID_TRY(read_number(obj, field, where, out));
  if (*out < 0)
    return fail(Result::InvalidArgument, "topology: %s: field '%s' is negative (%g)", where.c_str(), field, *out);
  return Result::Success;
}

Result read_int(const json& obj, const char* field, const std::string& where, int* out) {
  auto it = obj.find(field);
  if (it == obj.end() || it->is_null()) return Result::Success;
  if (!it->is_number_integer())
    return fail(Result::InvalidArgument, "topology: %s: field '%s' must be an integer", where.c_str(), field);
  *out = it->get<int>();
  if (*out < 0)
    return fail(Result::InvalidArgument, "topology: %s: field '%s' is negative (%d)", where.c_str(), field, *out);
  return Result::Success;
}

Result read_string(const json& obj, const char* field, const std::string& where, bool required,
                   std::string* out) {
  auto it = obj.find(field);
  if (it == obj.end() || it->is_null()) {
    if (required)
      return fail(Result::InvalidArgument, "topology: %s: missing field '%s'", where.c_str(), field);
    return Result::Success;
  }
  if (!it->is_string())
    return fail(Result::InvalidArgument, "topology: %s: field '%s' must be a string", where.c_str(), field);
  *out = it->get<std::string>();
  return Result::Success;
}

Result resolve_node(const std::map<std::string, int>& ids, const std::string& name, const std::string& where,
                    const char* field, int* out) {
  auto it = ids.find(name);
  if (it == ids.end())
    return fail(Result::InvalidArgument, "topology: %s: field '%s' names unknown node '%s'", where.c_str(),
                field, name.c_str());
  *out = it->second;
  return Result::Success;
}

Result parse_nodes(const json& doc, Topology* t, std::map<std::string, int>* ids,
                   std::vector<std::string>* numa_names) {
  auto nodes = doc.find("nodes");
  if (nodes == doc.end() || !nodes->is_array())
    return fail(Result::InvalidArgument, "topology: field 'nodes' must be an array");
  for (const json& item : *nodes) {
    Node n;
    n.id = static_cast<int>(t->nodes.size());
    std::string where = "node " + std::to_string(n.id);
    if (!item.is_object()) return fail(Result::InvalidArgument, "topology: %s is not an object", where.c_str());
    BRAID_TRY(read_string(item, "name", where, true, &n.name));
    if (n.name.empty()) return fail(Result::InvalidArgument, "topology: %s has an empty name", where.c_str());
    where = "node '" + n.name + "'";
    if (!ids->emplace(n.name, n.id).second)
      return fail(Result::InvalidArgument, "topology: duplicate node name '%s'", n.name.c_str());
    std::string kind;
    BRAID_TRY(read_string(item, "kind", where, true, &kind));
    std::optional<NodeKind> parsed = parse_node_kind(kind);
    if (!parsed)
      return fail(Result::InvalidArgument,
                  "topology: %s: unknown kind '%s' (gpu, numa, pcie_switch, nic, nvswitch, network)",
                  where.c_str(), kind.c_str());
    n.kind = *parsed;
    BRAID_TRY(read_int(item, "server", where, &n.server));
    BRAID_TRY(read_capacity(item, "memory_gbps", where, &n.memory_gbps));
    BRAID_TRY(read_int(item, "cores", where, &n.cores));
    BRAID_TRY(read_string(item, "pci_bus_id", where, false, &n.pci_bus_id));
    std::string numa;
    BRAID_TRY(read_string(item, "numa", where, false, &numa));
    numa_names->push_back(numa);
    t->nodes.push_back(std::move(n));
  }
  // "numa" may name a node listed later, so it resolves after all names are known.
  for (Node& n : t->nodes) {
    const std::string& numa = (*numa_names)[n.id];
    if (numa.empty()) continue;
    std::string where = "node '" + n.name + "'";
    BRAID_TRY(resolve_node(*ids, numa, where, "numa", &n.numa));
    if (t->nodes[n.numa].kind != NodeKind::Numa)
      return fail(Result::InvalidArgument, "topology: %s: field 'numa' names '%s', which is not a numa node",
                  where.c_str(), numa.c_str());
  }
  return Result::Success;
}

Result parse_links(const json& doc, const std::map<std::string, int>& ids, Topology* t) {
  auto links = doc.find("links");
  if (links == doc.end() || links->is_null()) return Result::Success;
  if (!links->is_array()) return fail(Result::InvalidArgument, "topology: field 'links' must be an array");
  for (const json& item : *links) {
    std::string where = "link " + std::to_string(t->links.size());
    if (!item.is_object()) return fail(Result::InvalidArgument, "topology: %s is not an object", where.c_str());
    Link l;
    std::string a, b, kind;
    BRAID_TRY(read_string(item, "a", where, true, &a));
    BRAID_TRY(read_string(item, "b", where, true, &b));
    where += " (" + a + "-" + b + ")";
    BRAID_TRY(resolve_node(ids, a, where, "a", &l.a));
    BRAID_TRY(resolve_node(ids, b, where, "b", &l.b));
    if (l.a == l.b) return fail(Result::InvalidArgument, "topology: %s joins a node to itself", where.c_str());
    BRAID_TRY(read_string(item, "kind", where, true, &kind));
    std::optional<LinkKind> parsed = parse_link_kind(kind);
    if (!parsed)
      return fail(Result::InvalidArgument, "topology: %s: unknown kind '%s' (pcie, nvlink, inter_socket, network)",
                  where.c_str(), kind.c_str());
    l.kind = *parsed;
    if (!item.contains("gbps_ab"))
      return fail(Result::InvalidArgument, "topology: %s: missing field 'gbps_ab'", where.c_str());
    BRAID_TRY(read_capacity(item, "gbps_ab", where, &l.gbps_ab));
    l.gbps_ba = l.gbps_ab;  // symmetric unless stated
    BRAID_TRY(read_capacity(item, "gbps_ba", where, &l.gbps_ba));
    BRAID_TRY(read_capacity(item, "latency_us", where, &l.latency_us));
    t->links.push_back(l);
  }
  return Result::Success;
}

}  // namespace

Result load_topology_json(const std::string& text, Topology* out) {
  if (out == nullptr) return fail(Result::InvalidArgument, "load_topology_json: out is null");
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return fail(Result::InvalidArgument, "topology: the text is not valid JSON");
  if (!doc.is_object()) return fail(Result::InvalidArgument, "topology: the document must be a JSON object");
  Topology t;
  const std::string where = "top level";
  BRAID_TRY(read_string(doc, "name", where, false, &t.name));
  BRAID_TRY(read_string(doc, "description", where, false, &t.description));
  BRAID_TRY(read_capacity(doc, "host_memcpy_gbps", where, &t.host_memcpy_gbps));
  BRAID_TRY(read_capacity(doc, "pcie_both_ways_gbps", where, &t.pcie_both_ways_gbps));
  std::map<std::string, int> ids;
  std::vector<std::string> numa_names;
  BRAID_TRY(parse_nodes(doc, &t, &ids, &numa_names));
  BRAID_TRY(parse_links(doc, ids, &t));
  BRAID_TRY(t.check());
  *out = std::move(t);
  return Result::Success;
}

std::string save_topology_json(const Topology& t) {
  json doc = json::object();
  doc["name"] = t.name;
  doc["description"] = t.description;
  doc["host_memcpy_gbps"] = t.host_memcpy_gbps;
  doc["pcie_both_ways_gbps"] = t.pcie_both_ways_gbps;
  auto node_name = [&](int id) -> json {
    if (id < 0 || id >= static_cast<int>(t.nodes.size())) return nullptr;
    return t.nodes[id].name;
  };
  json nodes = json::array();
  for (const Node& n : t.nodes) {
    json item = json::object();
    item["name"] = n.name;
    item["kind"] = node_kind_name(n.kind);
    item["server"] = n.server;
    item["numa"] = node_name(n.numa);
    item["memory_gbps"] = n.memory_gbps;
    item["cores"] = n.cores;
    item["pci_bus_id"] = n.pci_bus_id;
    nodes.push_back(std::move(item));
  }
  doc["nodes"] = std::move(nodes);
  json links = json::array();
  for (const Link& l : t.links) {
    json item = json::object();
    item["a"] = node_name(l.a);
    item["b"] = node_name(l.b);
    item["kind"] = link_kind_name(l.kind);
    item["gbps_ab"] = l.gbps_ab;
    item["gbps_ba"] = l.gbps_ba;
    item["latency_us"] = l.latency_us;
    links.push_back(std::move(item));
  }
  doc["links"] = std::move(links);
  return doc.dump(2) + "\n";
}

Result load_topology_file(const std::string& path, Topology* out) {
  std::ifstream in(path);
  if (!in) return fail(Result::InvalidArgument, "topology: cannot open '%s'", path.c_str());
  std::stringstream text;
  text << in.rdbuf();
  Result r = load_topology_json(text.str(), out);
  if (r != Result::Success) {
    std::string reason = last_error();  // fail() below rewrites the buffer last_error() points to
    return fail(r, "topology file '%s': %s", path.c_str(), reason.c_str());
  }
  return Result::Success;
}

}  // namespace braid::topo
