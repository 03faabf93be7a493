#include "validate/real_jdk.h"

#include <fstream>

namespace jackdaw::validate {
namespace {

// Each spin runs until the thread has used its CPU target (ThreadMXBean's
// thread CPU time), so a kind's demand does not depend on preemption.
constexpr const char* kServerSource = R"JAVA(
import com.sun.net.httpserver.*;
import java.io.*;
import java.lang.management.*;
import java.net.*;
import java.util.concurrent.*;

public class PoolServer {
  static final ThreadMXBean CPU = ManagementFactory.getThreadMXBean();
  static volatile long sink;

  static long spin(long cpuNs) {
    long start = CPU.getCurrentThreadCpuTime(), now = start, x = 0;
    while (now - start < cpuNs) {
      for (int i = 0; i < 20000; i++) x = x * 6364136223846793005L + 1442695040888963407L;
      now = CPU.getCurrentThreadCpuTime();
    }
    sink = x;
    return now - start;
  }

  static byte[] body(int n) {
    byte[] b = new byte[n];
    for (int i = 0; i < n; i++) b[i] = (byte) ('a' + i % 26);
    return b;
  }

  static HttpHandler spinner(long cpuNs, int bytes) {
    byte[] b = body(bytes);
    return ex -> {
      ex.getRequestBody().readAllBytes();
      long used = spin(cpuNs);
      ex.getResponseHeaders().set("X-Spin-Cpu-Ns", Long.toString(used));
      ex.sendResponseHeaders(200, b.length);
      try (OutputStream o = ex.getResponseBody()) { o.write(b); }
    };
  }

  public static void main(String[] a) throws Exception {
    HttpServer s = HttpServer.create(new InetSocketAddress("127.0.0.1", Integer.parseInt(a[0])), 128);
    s.createContext("/longspin", spinner(12_000_000L, 12));
    s.createContext("/shortspin", spinner(4_000_000L, 13));
    s.createContext("/small", spinner(0, 12 * 1024));
    s.createContext("/tiny", spinner(0, 5 * 1024));
    s.setExecutor(Executors.newFixedThreadPool(8));
    s.start();
    System.out.println("listening on " + a[0]);
  }
}
)JAVA";

}  // namespace

std::vector<RequestKind> JdkPoolRequestKinds() {
  return {{"longspin12ms", "/longspin", "get", 12, 200},
          {"shortspin4ms", "/shortspin", "get", 13, 200},
          {"small12K", "/small", "get", 12 * 1024, 200},
          {"tiny5K", "/tiny", "get", 5 * 1024, 200}};
}

Status WriteJdkPoolServer(const std::string& dir) {
  const std::string path = dir + "/PoolServer.java";
  std::ofstream f(path);
  f << kServerSource;
  f.close();
  if (!f) return ErrStatus("cannot write %s", path.c_str());
  return Status::Ok();
}

std::vector<std::string> JdkPoolArgv(const std::string& dir, uint16_t port) {
  return {kJavaBinary, "-Xmx128m", "-XX:+UseSerialGC", "-Xshare:auto", dir + "/PoolServer.java",
          std::to_string(port)};
}

}  // namespace jackdaw::validate
