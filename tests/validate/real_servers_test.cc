// The real-server suite in short form: Debian's nginx (plain, TLS, as a reverse proxy), the
// LEMP stack, unbound (UDP), memcached,
// apache2 (mpm_prefork), PostgreSQL, redis, lighttpd, MariaDB and the JDK's HTTP server on loopback with private
// configurations, driven by jackdaw's own clients, recorded with `jackdaw
// record --pid` started after the server (so its workers already exist;
// PostgreSQL's backends are forked during the recording, one per
// connection), analysed with the black-box schema and scored against the
// clients' ground truth.
//
// The bounds are the targets where they hold under load on this
// machine (README, tests/results/): every client request extracted exactly
// once (at most 1% missed), none merged, no extra requests (connection
// set-up and teardown are the connection's), and clusters that do not mix
// kinds. Clustering figures that depend on load (cluster counts, ARI) are
// measured by `jackdaw reproduce --real --repeat`, not asserted here.
#include <optional>

#include <gtest/gtest.h>

#include "real_fixture.h"
#include "schema/schema.h"

namespace jackdaw {
namespace {

class RealServers : public testing::RealServerTest {
 protected:
  RealServers() : RealServerTest("realsrv") {}

  // Records and analyses; nullopt after a failure or a skip.
  std::optional<validate::SchemaResult> RunAndAnalyze(const std::string& name) {
    auto run = Record(name);
    if (!run) return std::nullopt;
    last_run_ = *run;
    auto r = validate::AnalyzeRun(*run, "tcp-threadpool", schema::DefaultSchemaDirs(opts_.bin_dir + "/jackdaw"));
    EXPECT_TRUE(r.ok()) << r.status().message();
    if (!r.ok()) return std::nullopt;
    validate::PrintRealTable({{*run, {*r}}}, stdout);
    EXPECT_EQ(r->sent, uint64_t(kRequests));
    EXPECT_GT(r->extracted, 0u) << "no requests: were the server's workers traced? " << r->summary;
    return *r;
  }

  std::optional<validate::RecordedRun> last_run_;

  void RunAndExpectExact(const std::string& name) {
    auto r = RunAndAnalyze(name);
    if (!r) return;
    EXPECT_GE(r->exact, uint64_t(kRequests * 99 / 100)) << r->summary;
    EXPECT_EQ(r->merged, 0u) << r->summary;
    EXPECT_EQ(r->unmatched, 0u) << "extra requests: connection life emitted as requests? " << r->summary;
    EXPECT_GE(r->purity, 0.95);
    EXPECT_GE(r->accounted_cpu, 0.8) << r->summary;
  }
};

TEST_F(RealServers, NginxConnectionPerRequest) { RunAndExpectExact("nginx-close"); }

TEST_F(RealServers, NginxKeepAlive) { RunAndExpectExact("nginx-keepalive"); }

// TLS: each connection's handshake (ClientHello; the client's key exchange
// or change_cipher_spec and Finished; TLS 1.3's session tickets after it) is
// the connection's set-up, never a request. A connection per request with
// TLS 1.3 runs a handshake per request (resumed from the previous
// connection's ticket); keep-alive with TLS 1.2 runs one per client.
TEST_F(RealServers, NginxTls13ConnectionPerRequest) { RunAndExpectExact("nginx-tls13-close"); }

TEST_F(RealServers, NginxTls12KeepAlive) { RunAndExpectExact("nginx-tls12-keepalive"); }

// UDP: unbound answers 5 clients from one unconnected socket that both its
// threads serve. Each datagram's far end makes a flow of its own, so every
// query is one request naming its client (its port is how the scoring
// matches it). A, AAAA and NXDOMAIN answers differ by at most 28 bytes and
// take the same path through the server: the clustering may keep them
// together, so purity is measured (reproduce --real), not asserted.
TEST_F(RealServers, UnboundUdpNamesEachClient) {
  auto r = RunAndAnalyze("unbound-udp");
  if (!r) return;
  EXPECT_GE(r->exact, uint64_t(kRequests * 99 / 100)) << r->summary;
  EXPECT_EQ(r->merged, 0u) << r->summary;
  EXPECT_EQ(r->unmatched, 0u) << r->summary;
}

// Requests across processes: Debian's nginx as a reverse proxy with pooled
// upstream connections (keepalive 8) in front of jackdaw-testserver, both
// recorded. Every client request is one request rooted in nginx, none is
// the backend's alone, and a spin's CPU (the backend's own measure, sent
// back in X-Spin-Cpu-Ns) lands in its request's backend tier.
TEST_F(RealServers, NginxReverseProxyCarriesItsBackendsWork) {
  auto r = RunAndAnalyze("nginx-proxy");
  if (!r) return;
  EXPECT_GE(r->exact, uint64_t(kRequests * 99 / 100)) << r->summary;
  EXPECT_EQ(r->merged, 0u) << r->summary;
  EXPECT_EQ(r->unmatched, 0u) << "backend exchanges came out as requests of their own? " << r->summary;
  ASSERT_GT(r->measured_cpu, 0u) << "no X-Spin-Cpu-Ns came back through the proxy";
  EXPECT_GE(r->measured_cpu_within_10pct, r->measured_cpu * 9 / 10)
      << "requests whose backend tier is charged within 10 % of the backend's own measure";
  EXPECT_GE(r->purity, 0.95);
}

// The LEMP stack: nginx -> php-fpm on a unix socket -> MariaDB or redis on
// theirs, a connection per request at each hop; four processes recorded.
TEST_F(RealServers, LempRequestsSpanNginxPhpAndTheDatabase) { RunAndExpectExact("lemp"); }

TEST_F(RealServers, MemcachedPersistentConnections) { RunAndExpectExact("memcached"); }

TEST_F(RealServers, ApachePreforkConnectionPerRequest) { RunAndExpectExact("apache-close"); }

TEST_F(RealServers, ApachePreforkKeepAlive) { RunAndExpectExact("apache-keepalive"); }

// Shapes no rule was tuned for (added after the rules, measured with them
// unchanged): redis' one event-loop thread reads every ready connection,
// then writes the replies (in its own order) before it sleeps again, so one
// thread's turn interleaves several requests; and lighttpd's single
// process serving every connection from one epoll loop.
TEST_F(RealServers, RedisSingleThreadedEventLoop) { RunAndExpectExact("redis"); }

TEST_F(RealServers, LighttpdKeepAlive) { RunAndExpectExact("lighttpd-keepalive"); }

// A pool fed from one shared queue: the JDK's HTTP server hands each
// exchange to a fixed pool of 8 threads (ThreadPoolExecutor) that wake
// each other through the queue's lock, and its requests' code wakes the
// runtime's JIT compiler threads as it turns hot. None of those wake-ups
// carries a request: a pool thread joins one by its socket calls, and the
// compilers' work is the runtime's. Before, requests of one kind carried
// compilations of varying size: ARI 0.62 and 0.46, 9 and 11 clusters for 4
// kinds in this short form (0.53-0.67 over 300 requests); since, 0.93-0.99
// and 4 clusters. The bounds leave room for the load of a busy machine.
TEST_F(RealServers, JdkSharedQueuePoolChargesEachRequestItsOwnWork) {
  auto r = RunAndAnalyze("jdk-pool");
  if (!r) return;
  EXPECT_GE(r->exact, uint64_t(kRequests * 99 / 100)) << r->summary;
  EXPECT_EQ(r->merged, 0u) << r->summary;
  EXPECT_EQ(r->unmatched, 0u) << r->summary;
  EXPECT_GE(r->purity, 0.95) << r->summary;
  EXPECT_GE(r->ari, 0.85) << r->summary;
}

// A thread per connection and a server-first protocol: MariaDB greets, the
// client's login answers the greeting (the connection's set-up by the
// generic greeting rule, so no extra request), then queries.
TEST_F(RealServers, MariadbThreadPerConnectionWithAGreeting) { RunAndExpectExact("mariadb"); }

// A backend process forked per connection during the recording, persistent
// connections, queries that differ in rows returned and in WAL written.
// Backends that wake each other (a lock handed on, WAL flushed by one for
// all) serve requests of their own: the join keeps those wake-ups out of
// the requests (contention), so queries extract whole (298-300 of 300
// measured, none or one merged: a backend preempted after its response
// reads the next query late). The generic schema still extracts each
// connection's startup exchange as a request (a client-first handshake the
// bytes cannot tell from a query; named through the client's set-up log);
// the postgres schema declares it (`setup 1`) and has no extra request.
// Purity: a 1-row INSERT whose WAL another backend flushed does no disk
// I/O and has the work of a point SELECT; its messages tell it apart
// (53/22 B against 37/90 B), and who flushed the log does not count
// (cluster/README.md: 0.93-0.96 before, 0.99-1.00 since).
TEST_F(RealServers, PostgresBackendPerConnection) {
  auto r = RunAndAnalyze("postgres");
  if (!r) return;
  constexpr uint64_t kConnections = 4;
  EXPECT_EQ(r->unmatched, r->setup) << "extra requests other than the connections' startups " << r->summary;
  EXPECT_LE(r->setup, kConnections);
  EXPECT_GE(r->exact, uint64_t(kRequests * 9 / 10)) << r->summary;
  EXPECT_GE(r->purity, 0.95) << r->summary;
  EXPECT_GE(r->accounted_cpu, 0.8) << r->summary;
  // The same recording with the startup declared: no extra request.
  auto pg = validate::AnalyzeRun(*last_run_, "postgres", schema::DefaultSchemaDirs(opts_.bin_dir + "/jackdaw"));
  ASSERT_TRUE(pg.ok()) << pg.status().message();
  validate::PrintRealTable({{*last_run_, {*pg}}}, stdout);
  EXPECT_EQ(pg->unmatched, 0u) << pg->summary;
  EXPECT_LE(pg->merged, 1u) << pg->summary;
  EXPECT_GE(pg->exact, uint64_t(kRequests * 95 / 100)) << pg->summary;
  EXPECT_GE(pg->purity, 0.98) << pg->summary;
}

}  // namespace
}  // namespace jackdaw
