// Which interfaces the net plugin uses by default: NCCL's socket rules (NCCL_SOCKET_IFNAME with
// its "^" and "=" forms; else ib*, else all but docker*, lo* and virbr*, then those), so braid
// sends where NCCL would. BRAID_NET_NICS, when set, still names them outright.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "net/nics.h"

namespace braid::net {
namespace {

std::vector<Nic> up(const std::vector<std::string>& names) {
  std::vector<Nic> out;
  for (const std::string& n : names) {
    Nic nic;
    nic.name = n;
    out.push_back(nic);
  }
  return out;
}

std::string names(const std::vector<Nic>& nics) {
  std::string s;
  for (const Nic& n : nics) s += (s.empty() ? "" : ",") + n.name;
  return s;
}

std::string pick(const std::vector<std::string>& have, const std::string& ifname = "") {
  return names(select_interfaces(up(have), ifname));
}

TEST(NetNics, DefaultLeavesOutDockerLoopbackAndVirtualBridges) {
  EXPECT_EQ(pick({"lo", "eth0", "docker0", "virbr0", "tun0", "eth1"}), "eth0,tun0,eth1");
  EXPECT_EQ(pick({"lo", "docker0", "virbr0"}), "docker0");  // then docker, then lo, then virbr
  EXPECT_EQ(pick({"lo", "virbr0"}), "lo");
  EXPECT_EQ(pick({"virbr0"}), "virbr0");
  EXPECT_EQ(pick({}), "");
}

TEST(NetNics, DefaultPrefersInfinibandInterfaces) {
  EXPECT_EQ(pick({"lo", "eth0", "ib0", "ib1"}), "ib0,ib1");
}

TEST(NetNics, SocketIfnameIsAPrefixListWithExclusionAndExactForms) {
  const std::vector<std::string> have = {"lo", "eth0", "eth10", "ens1", "docker0"};
  EXPECT_EQ(pick(have, "eth"), "eth0,eth10");
  EXPECT_EQ(pick(have, "eth1"), "eth10");  // a prefix, as in NCCL
  EXPECT_EQ(pick(have, "=eth1"), "");
  EXPECT_EQ(pick(have, "=eth0"), "eth0");
  EXPECT_EQ(pick(have, "ens,docker"), "ens1,docker0");
  EXPECT_EQ(pick(have, "^eth,lo"), "ens1,docker0");
  EXPECT_EQ(pick(have, "^=eth0"), "lo,eth10,ens1,docker0");
  EXPECT_EQ(pick(have, "eth1:5000"), "eth10");  // NCCL's name:port; the port is ignored
  EXPECT_EQ(pick(have, "wlan"), "");
}

// Through the environment, as the plugin reads it; BRAID_NET_NICS still wins.
TEST(NetNics, FindNicsHonoursNcclSocketIfname) {
  std::vector<Nic> nics;
  setenv("NCCL_SOCKET_IFNAME", "=lo", 1);
  ASSERT_EQ(find_nics("", &nics), Result::Success);
  EXPECT_EQ(names(nics), "lo");
  setenv("NCCL_SOCKET_IFNAME", "no-such-interface", 1);
  EXPECT_EQ(find_nics("", &nics), Result::SystemError);
  ASSERT_EQ(find_nics("127.0.0.2,127.0.0.3", &nics), Result::Success);
  EXPECT_EQ(names(nics), "127.0.0.2,127.0.0.3");
  unsetenv("NCCL_SOCKET_IFNAME");
  ASSERT_EQ(find_nics("", &nics), Result::Success);
  for (const Nic& n : nics) EXPECT_NE(n.name.rfind("docker", 0), 0u) << n.name;
}

}  // namespace
}  // namespace braid::net
