// Helpers of the packet and stitching integration tests: a recorded
// jackdaw-testserver, and two "hosts" on this machine (network namespaces
// joined by a veth pair).
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace jackdaw::testing {

// Two network namespaces joined by a veth pair, with an address on each end
// that exists only there. Created in the constructor (ok() says whether it
// worked, error() why), removed in the destructor.
class TwoHosts {
 public:
  TwoHosts();
  ~TwoHosts();
  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  // Runs argv inside host 0 or 1 (argv prefixed with ip netns exec).
  std::vector<std::string> In(int host, const std::vector<std::string>& argv) const;
  const std::string& addr(int host) const { return addr_[host]; }

 private:
  std::string ns_[2], veth_[2], addr_[2];
  std::string error_;
};

// `jackdaw record` of one jackdaw-testserver (USDT probes attached): starts
// it, waits for "listening on", stops it (SIGINT to the recorder) on Stop().
class RecordedServer {
 public:
  // server_cmd: the server's argv (possibly wrapped by TwoHosts::In); the
  // server binary for --usdt is BinDir()/jackdaw-testserver.
  // record_args: extra options of jackdaw record (e.g. --probes, --pcap-iface).
  RecordedServer(const std::string& trace, const std::vector<std::string>& server_cmd,
                 const std::vector<std::string>& record_args = {});
  ~RecordedServer();
  bool ok() const { return port_ > 0; }
  int port() const { return port_; }
  // Exit code of jackdaw record.
  int Stop();

 private:
  pid_t recorder_ = -1;
  int out_fd_ = -1;
  int port_ = 0;
};

}  // namespace jackdaw::testing
