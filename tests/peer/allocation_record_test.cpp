// The records that name a buffer's allocation to peers in other processes, and the mapping
// cache's keys made of them: kinds and allocations never share a mapping.
#include "peer/allocation_record.h"

#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "peer/mapping_cache.h"

namespace braid::peer {
namespace {

CuMemAllocation sample_allocation() {
  CuMemAllocation a;
  a.broker = {4242, 0x1234abcd5678ef00};
  a.device = 3;
  a.base = 0x7f2a00000000;
  a.size = 2u << 20;
  a.block_id = 17;
  return a;
}

TEST(AllocationRecord, CuMemRecordsReadBackWhatWasWritten) {
  const CuMemAllocation a = sample_allocation();
  AllocationRecord record{};
  write_cumem_record(a, record);
  EXPECT_EQ(allocation_kind(record), AllocationKind::CuMemFd);
  CuMemAllocation back;
  ASSERT_TRUE(read_cumem_record(record, &back));
  EXPECT_EQ(back.broker.pid, a.broker.pid);
  EXPECT_EQ(back.broker.nonce, a.broker.nonce);
  EXPECT_EQ(back.fd_key(), a.fd_key());
  EXPECT_EQ(a.fd_key(), (FdKey{3, 0x7f2a00000000, 2u << 20, 17}));
}

TEST(AllocationRecord, CudaIpcRecordsCarryTheWholeHandle) {
  const uint64_t handle[kIpcHandleWords] = {1, 2, 3, 4, 5, 6, 7, ~0ull};
  AllocationRecord record{};
  write_cuda_ipc_record(handle, record);
  EXPECT_EQ(allocation_kind(record), AllocationKind::CudaIpc);
  const auto words = cuda_ipc_handle(record);
  EXPECT_TRUE(std::equal(words.begin(), words.end(), std::begin(handle)));
  CuMemAllocation unused;
  EXPECT_FALSE(read_cumem_record(record, &unused));
}

TEST(AllocationRecord, AnUnknownKindIsNone) {
  AllocationRecord record{};
  EXPECT_EQ(allocation_kind(record), AllocationKind::None);
  record[0] = 99;
  EXPECT_EQ(allocation_kind(record), AllocationKind::None);
}

// Each record that differs in kind, exporter (pid, broker nonce) or allocation (base, size, block
// id: a new allocation at a freed one's address) opens a mapping of its own, and the close hook
// is told which record it closes (a cuMem mapping is unmapped by its size).
TEST(AllocationRecord, KeysOfOtherKindsOrAllocationsOpenMappingsOfTheirOwn) {
  std::vector<AllocationRecord> records;
  const CuMemAllocation a = sample_allocation();
  auto add_cumem = [&](auto change) {
    CuMemAllocation changed = a;
    change(changed);
    write_cumem_record(changed, records.emplace_back());
  };
  add_cumem([](CuMemAllocation&) {});
  add_cumem([](CuMemAllocation& c) { c.broker.pid += 1; });
  add_cumem([](CuMemAllocation& c) { c.broker.nonce += 1; });
  add_cumem([](CuMemAllocation& c) { c.base += c.size; });
  add_cumem([](CuMemAllocation& c) { c.size *= 2; });
  add_cumem([](CuMemAllocation& c) { c.block_id += 1; });
  // A CUDA IPC handle whose words happen to equal the first cuMem record's payload.
  write_cuda_ipc_record(std::span<const uint64_t, kIpcHandleWords>(records[0].data() + 1, kIpcHandleWords),
                        records.emplace_back());

  std::map<unsigned char*, AllocationRecord> opened, closed;
  std::vector<unsigned char> memory(records.size());
  size_t next = 0;
  MappingCache cache(records.size() + 1,
                     {[&](const MappingCache::Key& key, unsigned char** base) {
                        *base = &memory[next++];
                        opened[*base] = key;
                        return Result::Success;
                      },
                      [&](const MappingCache::Key& key, unsigned char* base) { closed[base] = key; },
                      [] { return Result::Success; }});
  for (uint64_t call = 1; call <= 2; ++call)
    for (const AllocationRecord& r : records) {
      unsigned char* base = nullptr;
      ASSERT_EQ(cache.get(r, call, &base), Result::Success);
    }
  EXPECT_EQ(opened.size(), records.size());
  EXPECT_EQ(cache.size(), records.size());
  cache.close_all();
  EXPECT_EQ(closed, opened);
}

}  // namespace
}  // namespace braid::peer
