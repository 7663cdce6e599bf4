// The device braid records for a communicator: NCCL makes a communicator initialised inside a
// group only at the group's end and answers device 0 for it before then (2.28), which sent braid's
// first split of a rank on GPU 1 to GPU 0 (nccl-tests initialises every communicator in a group).
// libbraid.so forwards to the fake NCCL (fake_nccl.h), which answers the same way; with no GPU
// here, braid learns the device from NCCL, so the log line shows what it recorded.
#include <gtest/gtest.h>
#include <nccl.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace {

std::string log_path() { return "/tmp/braid_comm_device_test_" + std::to_string(getpid()) + ".log"; }

std::string log_text() {
  std::ifstream in(log_path());
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The fake's communicators sit on the GPU numbered as their rank.
std::string known_line(ncclComm_t comm, int rank, int nranks) {
  std::ostringstream line;
  line << "communicator " << static_cast<void*>(comm) << ": rank " << rank << " of " << nranks << " on GPU " << rank;
  return line.str();
}

TEST(CommDevice, MadeInsideAGroupIsLearntAtItsEnd) {
  ncclUniqueId id{};
  ncclComm_t comm = nullptr;
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  ASSERT_EQ(ncclCommInitRank(&comm, 2, id, 1), ncclSuccess);
  EXPECT_EQ(log_text().find(known_line(comm, 1, 2)), std::string::npos) << "known before NCCL initialised it";
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  EXPECT_NE(log_text().find(known_line(comm, 1, 2)), std::string::npos) << log_text();
  EXPECT_EQ(log_text().find("on GPU 0"), std::string::npos) << "the device NCCL answers inside the group: " << log_text();
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

TEST(CommDevice, MadeOutsideAGroupIsKnownAtOnce) {
  ncclUniqueId id{};
  ncclComm_t comm = nullptr;
  ASSERT_EQ(ncclCommInitRank(&comm, 4, id, 3), ncclSuccess);
  EXPECT_NE(log_text().find(known_line(comm, 3, 4)), std::string::npos) << log_text();
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

TEST(CommDevice, SeveralInOneGroupEachGetTheirOwn) {
  ncclUniqueId id{};
  ncclComm_t comms[3] = {};
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < 3; ++r) ASSERT_EQ(ncclCommInitRank(&comms[r], 3, id, r), ncclSuccess);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  for (int r = 0; r < 3; ++r) {
    EXPECT_NE(log_text().find(known_line(comms[r], r, 3)), std::string::npos) << log_text();
    EXPECT_EQ(ncclCommDestroy(comms[r]), ncclSuccess);
  }
}

}  // namespace

int main(int argc, char** argv) {
  // Before libbraid.so's first call reads its settings.
  setenv("BRAID_NCCL_LIBRARY", BRAID_FAKE_NCCL_PATH, 1);
  setenv("BRAID_DEBUG", "INFO", 1);
  setenv("BRAID_DEBUG_SUBSYS", "SHIM", 1);
  setenv("BRAID_DEBUG_FILE", log_path().c_str(), 1);
  unsetenv("BRAID_DISABLE");
  ::testing::InitGoogleTest(&argc, argv);
  const int result = RUN_ALL_TESTS();
  unlink(log_path().c_str());
  return result;
}
