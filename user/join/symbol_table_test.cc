#include "join/symbol_table.h"

#include <gtest/gtest.h>

#include "jackdaw/abi.h"

namespace jackdaw::join {
namespace {

using schema::EventKind;

template <typename T>
const uint8_t* Bytes(const T& v) {
  return reinterpret_cast<const uint8_t*>(&v);
}

class SymbolTableTest : public ::testing::Test {
 protected:
  std::vector<std::string> syscalls_{"read", "write", ""};
  std::vector<std::string> probes_{"srv:request_start"};
  SymbolTable table_{syscalls_, probes_};
  std::string Name(EventKind k, uint16_t type, const uint8_t* payload, bool after_block = false) {
    return table_.Get(table_.Of(k, type, payload, after_block)).str();
  }
};

TEST_F(SymbolTableTest, NamesEachKindOfEvent) {
  jdw_sys_enter enter{};
  enter.nr = 1;
  EXPECT_EQ(Name(EventKind::kRecord, JDW_EVENT_SYS_ENTER, Bytes(enter)), "sys_enter:write");
  jdw_sys_exit exit{};
  exit.nr = 2;  // a number without a name
  EXPECT_EQ(Name(EventKind::kRecord, JDW_EVENT_SYS_EXIT, Bytes(exit)), "sys_exit:2");
  jdw_usdt u{};
  EXPECT_EQ(Name(EventKind::kUsdt, JDW_EVENT_USDT, Bytes(u)), "usdt:srv:request_start");
  u.probe_id = 7;  // not in the probe table
  EXPECT_EQ(Name(EventKind::kUsdt, JDW_EVENT_USDT, Bytes(u)), "usdt:probe7");
  jdw_block_complete bc{};
  bc.op = 1 | (1u << 11);  // REQ_OP_WRITE with a flag above the op byte
  EXPECT_EQ(Name(EventKind::kRecord, JDW_EVENT_BLOCK_COMPLETE, Bytes(bc)), "block_complete:write");
  EXPECT_EQ(Name(EventKind::kIoStart, JDW_EVENT_BLOCK_COMPLETE, Bytes(bc)), "io_start:write");
  jdw_sched_switch sw{};
  EXPECT_EQ(Name(EventKind::kSwitchOut, JDW_EVENT_SCHED_SWITCH, Bytes(sw), true), "switch_out:blocked");
  EXPECT_EQ(Name(EventKind::kSwitchOut, JDW_EVENT_SCHED_SWITCH, Bytes(sw), false), "switch_out:preempted");
  EXPECT_EQ(Name(EventKind::kSwitchIn, JDW_EVENT_SCHED_SWITCH, Bytes(sw), true), "switch_in");
  jdw_net_packet p{};
  EXPECT_EQ(Name(EventKind::kRecord, JDW_EVENT_NET_RECV, Bytes(p)), "net_recv");
}

TEST_F(SymbolTableTest, InternsEachSymbolOnce) {
  jdw_sys_enter a{}, b{};
  a.nr = 0;
  b.nr = 1;
  const uint32_t ra = table_.Of(EventKind::kRecord, JDW_EVENT_SYS_ENTER, Bytes(a), false);
  const uint32_t rb = table_.Of(EventKind::kRecord, JDW_EVENT_SYS_ENTER, Bytes(b), false);
  EXPECT_NE(ra, rb);
  EXPECT_EQ(table_.Of(EventKind::kRecord, JDW_EVENT_SYS_ENTER, Bytes(a), false), ra);
  // The exit of the same syscall is another symbol.
  jdw_sys_exit x{};
  EXPECT_NE(table_.Of(EventKind::kRecord, JDW_EVENT_SYS_EXIT, Bytes(x), false), ra);
  jdw_block_complete bc{};
  const uint32_t done = table_.Of(EventKind::kRecord, JDW_EVENT_BLOCK_COMPLETE, Bytes(bc), false);
  EXPECT_EQ(table_.Of(EventKind::kRecord, JDW_EVENT_BLOCK_COMPLETE, Bytes(bc), false), done);
  EXPECT_EQ(table_.size(), 4u);
}

}  // namespace
}  // namespace jackdaw::join
