// A random ncclUniqueId for tests whose communicators are made against the fake NCCL: distinct
// ids keep the exchange boards of different tests' communicators apart.
#pragma once

#include <nccl.h>

#include <random>

namespace braid::test {

inline ncclUniqueId random_unique_id() {
  ncclUniqueId id{};
  std::random_device rd;
  for (char& c : id.internal) c = static_cast<char>(rd());
  return id;
}

}  // namespace braid::test
