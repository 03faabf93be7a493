// A Java server of the real-server suite: the JDK's own HTTP server
// (com.sun.net.httpserver) with a fixed pool of 8 threads behind it
// (Executors.newFixedThreadPool: a ThreadPoolExecutor taking tasks from
// one LinkedBlockingQueue). Its dispatcher thread selects over every
// connection and queues an exchange when one turns readable; whichever
// pool thread takes it reads the request, runs the handler and writes the
// reply. The pool threads wake each other through the queue's lock and
// condition (a ReentrantLock: futex waits of HotSpot's parker), wake-ups
// that carry no request.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "validate/real_client.h"

namespace jackdaw::validate {

// Debian's java launcher (openjdk-17-jdk-headless: the source launcher
// compiles the server when it starts) and the package that provides it.
constexpr const char* kJavaBinary = "/usr/bin/java";
constexpr const char* kJavaPackage = "openjdk-17-jdk-headless";

// Table 1's A-D as the server answers them: two CPU spins (their thread
// CPU in X-Spin-Cpu-Ns) and two bodies of fixed sizes.
std::vector<RequestKind> JdkPoolRequestKinds();

// Writes the server's source (PoolServer.java) into dir.
Status WriteJdkPoolServer(const std::string& dir);

// The JVM running it on 127.0.0.1:port with a small heap and one GC
// thread, so the pool's threads are most of what runs.
std::vector<std::string> JdkPoolArgv(const std::string& dir, uint16_t port);

}  // namespace jackdaw::validate
