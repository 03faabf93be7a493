// The kernel's interactions against the clients and the join on the
// real-server suite (issue 11): each workload recorded as `jackdaw
// reproduce --real` records it — full capture and `jackdaw interactions`
// side by side on Debian's server — and the server's interactions matched
// one to one (validate/real_interactions.h).
//
// The kernel's side is asserted against the clients' ground truth: that
// is its own correctness (one interaction per request, inside the client's
// interval). Against the join, the HTTP and memcached workloads — a
// connection per request or kept alive — are held to 95% one to one: with
// the message rule the join's requests are the kernel's interactions
// (`jackdaw reproduce --real` measured 300/300 on each, this test 80/80),
// and the margin is for a loaded machine.
//
// MariaDB speaks first (its handshake packet): the kernel takes a
// connection's role from how it was opened, so its server end is the
// server, the greeting and the login answering it are the connection's,
// as in the join, and the client's COM_QUIT (no answer) is not an
// interaction either; held to the same as the HTTP servers.
//
// PostgreSQL (a backend process per connection) is held to what it
// measures, and its gaps are named: each connection's startup exchange is
// an interaction (the clients log it as set-up, so it is counted apart;
// client-first, nothing tells it from a request but the schema's `setup
// 1`), the client's Terminate message before it closes is the
// connection's (one-way), and the join's requests agree with the
// interactions on 85–89% (README: requests that flush WAL are joined
// through other backends' lock wake-ups and disk completions).
#include <optional>

#include <gtest/gtest.h>

#include "real_fixture.h"
#include "schema/schema.h"
#include "validate/real_interactions.h"

namespace jackdaw {
namespace {

class RealInteractions : public testing::RealServerTest {
 protected:
  RealInteractions() : RealServerTest("realia") {}

  // Records and compares; nullopt after a failure or a skip.
  std::optional<validate::InteractionAgreement> RunAndCompare(const std::string& name) {
    auto run = Record(name);
    if (!run) return std::nullopt;
    auto a = validate::CompareRunInteractions(*run, "tcp-threadpool",
                                              schema::DefaultSchemaDirs(opts_.bin_dir + "/jackdaw"));
    EXPECT_TRUE(a.ok()) << a.status().message();
    if (!a.ok()) return std::nullopt;
    validate::PrintInteractionTable({{name, *a}}, stdout);
    EXPECT_EQ(a->truth.left, uint64_t(kRequests));
    EXPECT_EQ(a->lost, 0u);
    // Every client request is one server interaction; each lies inside its
    // client's send..receive interval (1 ms slack at each end).
    EXPECT_EQ(a->truth.one_to_one, uint64_t(kRequests));
    EXPECT_EQ(a->inside_1ms, a->truth.one_to_one);
    return *a;
  }

  void RunAndExpectAgreement(const std::string& name) {
    auto a = RunAndCompare(name);
    if (!a) return;
    EXPECT_EQ(a->truth.right, uint64_t(kRequests)) << "one server interaction per request, no extra";
    EXPECT_EQ(a->flagged, 0u);
    EXPECT_GE(a->join.one_to_one, uint64_t(kRequests * 95 / 100));
  }
};

TEST_F(RealInteractions, NginxConnectionPerRequest) { RunAndExpectAgreement("nginx-close"); }

TEST_F(RealInteractions, NginxKeepAlive) { RunAndExpectAgreement("nginx-keepalive"); }

TEST_F(RealInteractions, Memcached) { RunAndExpectAgreement("memcached"); }

TEST_F(RealInteractions, ApachePreforkConnectionPerRequest) { RunAndExpectAgreement("apache-close"); }

TEST_F(RealInteractions, ApachePreforkKeepAlive) { RunAndExpectAgreement("apache-keepalive"); }

TEST_F(RealInteractions, MariadbServerFirst) { RunAndExpectAgreement("mariadb"); }

TEST_F(RealInteractions, PostgresBackendPerConnection) {
  auto a = RunAndCompare("postgres");
  if (!a) return;
  constexpr uint64_t kConnections = 4;
  EXPECT_EQ(a->setup, kConnections) << "each connection's startup: one interaction";
  EXPECT_EQ(a->flagged, 0u) << "the clients' Terminate messages are one-way: the connections'";
  EXPECT_EQ(a->truth.right, uint64_t(kRequests) + a->setup) << "no other interaction";
  EXPECT_GE(a->join.one_to_one, uint64_t(kRequests * 3 / 4));
}

}  // namespace
}  // namespace jackdaw
