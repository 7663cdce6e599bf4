// Candidate paths for each (src, dst) GPU pair of a topology, as NIMBLE routes them:
// the direct GPU-GPU link(s), 2-hop relays through a third GPU (both hops direct links), and,
// where the topology has NICs, paths out of a NIC of the source's server and into a NIC of the
// destination's server (rail-matched: the k-th NIC of one server to the k-th of the other),
// reaching each NIC over NVLink to the GPU beside it where that is a direct link.
#pragma once

#include <vector>

#include "common/result.h"
#include "topo/topology.h"

namespace braid::route {

struct PathOptions {
  bool relays = true;  // 2-hop src -> k -> dst through another GPU
  bool nics = true;    // through NICs (only between GPUs of different servers)
  int max_relays = -1; // at most this many relay GPUs per pair (the lowest-numbered); -1: all
  // What a relayed byte achieves of the links' capacity: a relay hop's capacity is the link's
  // times this (forwarding through a GPU costs injection, L2/HBM traffic and pipeline fill;
  // NIMBLE measures 213 GB/s for direct + one relay over 120 GB/s links, about 0.78).
  double relay_efficiency = 1.0;
};

// One direction of one topology link.
struct DirLink {
  int link = 0;         // index in Topology::links
  bool forward = true;  // a -> b
  double capacity = 0;  // bytes/s this path gets from the link (relay hops: times relay_efficiency)
};

enum class PathKind { Direct, Relay, Nic, Default };

struct Path {
  PathKind kind = PathKind::Direct;
  std::vector<DirLink> hops;
  int via = -1;  // Relay: the rank (GPU index) the path goes through
};

// All candidate paths, per ordered GPU pair.
struct PathSet {
  int ranks = 0;                           // GPUs of the topology, in Topology::gpus() order
  std::vector<std::vector<Path>> pairs;    // [src * ranks + dst]; empty on the diagonal
  const std::vector<Path>& of(int src, int dst) const { return pairs[size_t(src * ranks + dst)]; }
};

// Fails when some pair of distinct GPUs has no path at all. Direct paths come first, then
// relays (by relay GPU), then NIC paths, so path 0 is the direct one where there is one.
// A pair with neither direct link, relay nor NIC path gets the topology's default route.
Result build_paths(const topo::Topology& t, const PathOptions& opt, PathSet* out);

}  // namespace braid::route
