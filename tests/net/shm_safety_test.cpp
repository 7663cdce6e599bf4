// The net plugin's files in /dev/shm (the host's NIC board, relay pools) where other users share
// the host: a file planted under the name is never used (another user's) or never trusted (this
// user's, open to others: replaced), a header that does not fit its file is refused, stale files
// are replaced, and an exit that skips the plugin's finalize leaves nothing behind.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "net/nic_monitor.h"
#include "net/relay_shm.h"

namespace braid::net {
namespace {

constexpr uid_t kOtherUser = 65534;  // nobody

std::string shm_name(const char* what) { return "/braid-shmtest-" + std::to_string(getpid()) + "-" + what; }
std::string shm_path(const std::string& name) { return "/dev/shm" + name; }
bool shm_exists(const std::string& name) { return access(shm_path(name).c_str(), F_OK) == 0; }
struct stat shm_stat(const std::string& name) {
  struct stat st {};
  stat(shm_path(name).c_str(), &st);
  return st;
}

// A pool of four 256 KiB slots this process offers under `name`; null if it could not.
std::unique_ptr<SharedRelayPool> offered_pool(const std::string& name) {
  std::unique_ptr<SharedRelayPool> p;
  EXPECT_EQ(SharedRelayPool::offer(name, 1 << 20, 1 << 18, &p), Result::Success);
  return p;
}

// A file as another local user would plant it: mode 0666, `bytes` long, owned by `owner`.
// False when this process may not give a file away (not root): the caller skips.
bool plant(const std::string& name, size_t bytes, uid_t owner) {
  int fd = shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0666);
  if (fd < 0) return false;
  fchmod(fd, 0666);
  bool ok = ftruncate(fd, off_t(bytes)) == 0 && (owner == geteuid() || fchown(fd, owner, owner) == 0);
  close(fd);
  if (!ok) shm_unlink(name.c_str());
  return ok;
}

// Row 3: a board another user planted (and could truncate under us: SIGBUS) is refused, left as
// it is. Before, it was opened with O_CREAT and used.
TEST(NetShm, BoardPlantedByAnotherUserIsRefused) {
  const std::string name = shm_name("board-foreign");
  if (!plant(name, 0, kOtherUser)) GTEST_SKIP() << "giving a file to another user needs root";
  std::unique_ptr<NicMonitor> m;
  EXPECT_EQ(NicMonitor::open_shared(name, 2, 1000000, &m), Result::SystemError);
  EXPECT_FALSE(m);
  EXPECT_EQ(shm_stat(name).st_size, 0) << "the planted file was sized and used";
  shm_unlink(name.c_str());
}

// A board of this user's that others may read and write is not trusted: it is replaced by a new
// file at mode 0600.
TEST(NetShm, BoardOpenToOthersIsReplaced) {
  const std::string name = shm_name("board-open");
  ASSERT_TRUE(plant(name, 4096, geteuid()));
  const ino_t planted = shm_stat(name).st_ino;
  std::unique_ptr<NicMonitor> m;
  ASSERT_EQ(NicMonitor::open_shared(name, 2, 1000000, &m), Result::Success);
  const struct stat st = shm_stat(name);
  EXPECT_NE(st.st_ino, planted);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(st.st_uid, geteuid());
  m.reset();
  EXPECT_FALSE(shm_exists(name));
}

// A board left by a process that was killed (nobody has it open) is replaced at the next open,
// not shared with the dead.
TEST(NetShm, StaleBoardIsReplacedAtOpen) {
  const std::string name = shm_name("board-stale");
  pid_t child = fork();
  if (child == 0) {
    std::unique_ptr<NicMonitor> cm;
    if (NicMonitor::open_shared(name, 2, 1000000, &cm) != Result::Success) _exit(2);
    raise(SIGKILL);
  }
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status));
  ASSERT_TRUE(shm_exists(name));
  const ino_t stale = shm_stat(name).st_ino;
  std::unique_ptr<NicMonitor> m;
  ASSERT_EQ(NicMonitor::open_shared(name, 2, 1000000, &m), Result::Success);
  EXPECT_NE(shm_stat(name).st_ino, stale);
  m.reset();
  EXPECT_FALSE(shm_exists(name));
}

// Row 14 (net): a process that ends with exit() without the plugin's finalize removes the board
// (as its last user) and the relay pool it offered.
TEST(NetShm, ExitWithoutFinalizeLeavesNoFiles) {
  const std::string board = shm_name("board-exit"), pool = shm_name("pool-exit");
  pid_t child = fork();
  if (child == 0) {
    auto* m = new std::unique_ptr<NicMonitor>();  // never destroyed, as when finalize is skipped
    auto* p = new std::unique_ptr<SharedRelayPool>();
    if (NicMonitor::open_shared(board, 2, 1000000, m) != Result::Success) _exit(2);
    if (SharedRelayPool::offer(pool, 1 << 20, 1 << 18, p) != Result::Success || !*p) _exit(3);
    if (!shm_exists(board) || !shm_exists(pool)) _exit(4);
    exit(0);
  }
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0);
  EXPECT_FALSE(shm_exists(board));
  EXPECT_FALSE(shm_exists(pool));
  shm_unlink(board.c_str());
  shm_unlink(pool.c_str());
}

// A child forked from a process with the files open, exiting, removes none of its parent's.
TEST(NetShm, ForkedChildExitKeepsTheParentsFiles) {
  const std::string board = shm_name("board-fork"), pool = shm_name("pool-fork");
  std::unique_ptr<NicMonitor> m;
  std::unique_ptr<SharedRelayPool> p;
  ASSERT_EQ(NicMonitor::open_shared(board, 2, 1000000, &m), Result::Success);
  ASSERT_EQ(SharedRelayPool::offer(pool, 1 << 20, 1 << 18, &p), Result::Success);
  ASSERT_TRUE(p);
  pid_t child = fork();
  if (child == 0) exit(0);
  int status = 0;
  waitpid(child, &status, 0);
  EXPECT_TRUE(shm_exists(board));
  EXPECT_TRUE(shm_exists(pool));
  EXPECT_TRUE(p->owner_alive());
  m.reset();
  p.reset();
  EXPECT_FALSE(shm_exists(board));
  EXPECT_FALSE(shm_exists(pool));
}

// Row 2: a relay pool another user planted (here: a real pool given away, so its header is valid
// and its owner alive) is never attached, and never offered in place of our own: its slots would
// carry this user's message bytes. Before, attach checked neither owner nor mode.
TEST(NetShm, RelayPoolOfAnotherUserIsNeverAttached) {
  if (geteuid() != 0) GTEST_SKIP() << "giving a file to another user needs root";
  const std::string name = shm_name("pool-foreign");
  std::unique_ptr<SharedRelayPool> owner = offered_pool(name);
  ASSERT_TRUE(owner);
  ASSERT_EQ(chown(shm_path(name).c_str(), kOtherUser, kOtherUser), 0);
  ASSERT_EQ(chmod(shm_path(name).c_str(), 0666), 0);
  std::unique_ptr<SharedRelayPool> borrower, second;
  EXPECT_EQ(SharedRelayPool::attach(name, &borrower), Result::SystemError);
  EXPECT_FALSE(borrower) << "another user's pool was attached";
  EXPECT_EQ(SharedRelayPool::offer(name, 1 << 20, 1 << 18, &second), Result::SystemError);
  EXPECT_FALSE(second);
  owner.reset();
  shm_unlink(name.c_str());
}

// A pool of this user's that others may read is not trusted: a borrower does not attach it (and
// removes the name, so the owner's next offer makes a private one).
TEST(NetShm, RelayPoolOpenToOthersIsNotAttached) {
  const std::string name = shm_name("pool-open");
  std::unique_ptr<SharedRelayPool> owner = offered_pool(name);
  ASSERT_TRUE(owner);
  ASSERT_EQ(chmod(shm_path(name).c_str(), 0666), 0);
  std::unique_ptr<SharedRelayPool> borrower;
  EXPECT_EQ(SharedRelayPool::attach(name, &borrower), Result::Success);
  EXPECT_FALSE(borrower) << "a pool others may read was attached";
  owner.reset();
  shm_unlink(name.c_str());
}

// Row 2: a header whose counts do not fit its file (slots unbounded, a product that overflows) is
// refused. The header's first fields: ready, owner pid (4 bytes each), slot bytes, slots (8 each).
TEST(NetShm, RelayPoolHeaderThatDoesNotFitIsRefused) {
  const std::string name = shm_name("pool-header");
  std::unique_ptr<SharedRelayPool> owner = offered_pool(name);
  ASSERT_TRUE(owner);
  int fd = shm_open(name.c_str(), O_RDWR, 0);
  ASSERT_GE(fd, 0);
  auto* h = static_cast<uint64_t*>(mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
  close(fd);
  ASSERT_NE(h, MAP_FAILED);
  ASSERT_EQ(h[1], uint64_t(1 << 18)) << "the header's layout changed; update this test";
  const uint64_t good_slots = h[2];
  const uint64_t bad[] = {uint64_t(1) << 52, good_slots + 1, 1 << 20};  // 2^52 * 2^18 wraps to 0
  for (uint64_t slots : bad) {
    h[2] = slots;
    std::unique_ptr<SharedRelayPool> borrower;
    SharedRelayPool::attach(name, &borrower);
    EXPECT_FALSE(borrower) << slots << " slots attached";
  }
  h[2] = good_slots;
  munmap(h, 4096);
  owner.reset();
  shm_unlink(name.c_str());
}

}  // namespace
}  // namespace braid::net
