// `jackdaw analyze --pcap-input` streams the capture: a million packets spread
// over 1,000 s (104 MB as records) go through with the memory of the
// reorder window, not of the whole file.
#include <sys/resource.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>

#include <gtest/gtest.h>

#include "pcap/synthetic_trace.h"
#include "support/test_support.h"

namespace jackdaw {
namespace {

// A classic pcap (nanosecond stamps, raw IPv4) of `n` TCP packets 1 ms apart.
void WriteCapture(const std::string& path, uint64_t n) {
  FILE* f = fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  const uint32_t global[6] = {0xa1b23c4d, 0x00040002, 0, 0, 65535, 101 /* LINKTYPE_RAW */};
  fwrite(global, sizeof(global), 1, f);
  uint8_t pkt[40] = {};
  pkt[0] = 0x45;
  pkt[3] = 40;
  pkt[8] = 64;
  pkt[9] = 6;
  const uint8_t src[4] = {10, 0, 0, 1}, dst[4] = {10, 0, 0, 2};
  memcpy(pkt + 12, src, 4);
  memcpy(pkt + 16, dst, 4);
  pkt[20] = 0x30, pkt[21] = 0x39;  // 12345
  pkt[22] = 0x00, pkt[23] = 0x50;  // 80
  pkt[32] = 0x50;
  pkt[33] = 0x10;  // ACK
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t ns = 1'000'000'000 + i * 1'000'000;
    const uint32_t rec[4] = {uint32_t(ns / 1'000'000'000), uint32_t(ns % 1'000'000'000), 40, 40};
    fwrite(rec, sizeof(rec), 1, f);
    fwrite(pkt, sizeof(pkt), 1, f);
  }
  ASSERT_EQ(fclose(f), 0);
}

TEST(PcapStream, AnalyzeHoldsTheReorderWindowNotTheCapture) {
  constexpr uint64_t kPackets = 1'000'000;
  const std::string trace = testing::TempPath("stream.jdw"), capture = testing::TempPath("stream.pcap");
  const std::string err = testing::TempPath("stream.err");
  testing::WriteOneRecordTrace(trace, false, 1'000'000'000);
  WriteCapture(capture, kPackets);
  const pid_t pid = fork();
  if (pid == 0) {
    const int fd = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(fd, STDERR_FILENO);
    const int null = open("/dev/null", O_WRONLY);
    dup2(null, STDOUT_FILENO);
    const std::string bin = testing::BinDir() + "/jackdaw";
    execl(bin.c_str(), bin.c_str(), "analyze", trace.c_str(), "--schema", "tcp-threadpool", "--pcap-input",
          capture.c_str(), "-q", static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  rusage ru{};
  ASSERT_EQ(wait4(pid, &status, 0, &ru), pid);
  std::string log;
  {
    FILE* f = fopen(err.c_str(), "r");
    ASSERT_NE(f, nullptr);
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), f)) > 0) log.append(buf, n);
    fclose(f);
  }
  ASSERT_TRUE(WIFEXITED(status)) << log;
  EXPECT_NE(log.find("1000000 IP packets of 1000000 frames merged"), std::string::npos) << log;
  // Held whole, the records alone are 104 MB; the window is 1,000 of them.
  EXPECT_LT(ru.ru_maxrss, 64 * 1024) << "peak " << ru.ru_maxrss / 1024 << " MB\n" << log;
  for (const auto& p : {trace, capture, err}) std::filesystem::remove(p);
}

}  // namespace
}  // namespace jackdaw
