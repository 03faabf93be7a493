// The kernel's interactions against the clients and the join on the
// real-server suite (issue 11): each workload recorded as `jackdaw
// reproduce --real` records it — full capture and `jackdaw interactions`
// side by side on Debian's server — and the server's interactions matched
// one to one (validate/real_interactions.h).
//
// The kernel's side is asserted against the clients' ground truth: that
// is its own correctness (one interaction per request, inside the client's
// interval). Against the join, connection-per-request workloads are held
// to 90% one to one. On kept-alive connections the bound is only "some
// agree": it was set before the join had the message rule, when its
// requests ran from the read of one request to the arrival of the next;
// with the rule, `jackdaw reproduce --real` measured 300/300 on all five
// workloads (README), and the keep-alive bounds may be raised to match.
#include <unistd.h>

#include <filesystem>

#include <gtest/gtest.h>

#include "schema/schema.h"
#include "support/test_support.h"
#include "validate/real_interactions.h"
#include "validate/real_suite.h"

namespace jackdaw {
namespace {

constexpr int kRequests = 80;

class RealInteractions : public ::testing::Test {
 protected:
  void SetUp() override {
    JDW_REQUIRE_ROOT();
    opts_.bin_dir = testing::BinDir();
    opts_.work_dir = testing::TempPath("realia");
    std::filesystem::create_directories(opts_.work_dir);
  }
  void TearDown() override { std::filesystem::remove_all(opts_.work_dir); }

  validate::InteractionAgreement Run(const std::string& name) {
    auto sel = validate::SelectRealWorkloads(validate::RealWorkloads(kRequests), {name});
    EXPECT_TRUE(sel.ok() && sel->size() == 1u);
    if (!sel.ok() || sel->empty()) return {};
    const std::string bin = validate::ServerBinary((*sel)[0].server);
    if (access(bin.c_str(), X_OK) != 0) {
      ADD_FAILURE() << bin << " missing: run scripts/install-deps.sh as root";
      return {};
    }
    auto run = validate::RecordRealWorkload(opts_, (*sel)[0]);
    EXPECT_TRUE(run.ok()) << run.status().message();
    if (!run.ok()) return {};
    auto a = validate::CompareRunInteractions(*run, "tcp-threadpool",
                                              schema::DefaultSchemaDirs(testing::BinDir() + "/jackdaw"));
    EXPECT_TRUE(a.ok()) << a.status().message();
    if (!a.ok()) return {};
    validate::PrintInteractionTable({{name, *a}}, stdout);
    EXPECT_EQ(a->truth.left, uint64_t(kRequests));
    EXPECT_EQ(a->lost, 0u);
    return *a;
  }

  validate::RealRunOptions opts_;
};

// Every client request is one server interaction and nothing else is; each
// lies inside its client's send..receive interval (1 ms slack at each end).
void ExpectOneToOneWithTruth(const validate::InteractionAgreement& a) {
  EXPECT_EQ(a.truth.one_to_one, uint64_t(kRequests));
  EXPECT_EQ(a.truth.right, uint64_t(kRequests)) << "one server interaction per request, no extra";
  EXPECT_EQ(a.inside_1ms, a.truth.one_to_one);
  EXPECT_EQ(a.flagged, 0u);
}

TEST_F(RealInteractions, NginxConnectionPerRequest) {
  auto a = Run("nginx-close");
  ExpectOneToOneWithTruth(a);
  EXPECT_GE(a.join.one_to_one, uint64_t(kRequests * 9 / 10));
}

TEST_F(RealInteractions, NginxKeepAlive) {
  auto a = Run("nginx-keepalive");
  ExpectOneToOneWithTruth(a);
  EXPECT_GT(a.join.one_to_one, 0u);
}

TEST_F(RealInteractions, Memcached) {
  auto a = Run("memcached");
  ExpectOneToOneWithTruth(a);
  EXPECT_GT(a.join.one_to_one, 0u);
}

TEST_F(RealInteractions, ApachePreforkConnectionPerRequest) {
  auto a = Run("apache-close");
  ExpectOneToOneWithTruth(a);
  EXPECT_GE(a.join.one_to_one, uint64_t(kRequests * 9 / 10));
}

TEST_F(RealInteractions, ApachePreforkKeepAlive) {
  auto a = Run("apache-keepalive");
  ExpectOneToOneWithTruth(a);
  EXPECT_GT(a.join.one_to_one, 0u);
}

}  // namespace
}  // namespace jackdaw
