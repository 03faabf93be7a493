// The request types of Magpie Table 1 (OSDI 2004, §6), written once: the
// server's URL table, the load driver's --mix letters, the ground truth and
// the tests all derive from kRequestTypes.
//
//   A /longspin   1 thread spins the CPU 30 ms
//   B /shortspin  1 thread spins 15 ms
//   C /small      12 KB static file read from disk
//   D /tiny       5 KB static file read from disk
//   E /parspin    2 threads spin 15 ms concurrently (worker + helper)
//   F /rpcspin    worker spins 7.5 ms, signals a helper and waits; the
//                 helper spins 15 ms and signals back; the worker spins
//                 7.25 ms more
//
// Two-tier (Magpie §4.1, Table 6: the book and categories pages of the web +
// database site), served only when the server was given a --backend:
//   G /book        the worker makes 1 call to the backend (GET /tiny)
//   H /categories  the worker makes 3 calls to the backend, one after another
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace jackdaw::testserver {

enum class RequestKind : uint8_t {
  kSpin,     // A, B: one thread spins
  kStatic,   // C, D: static file from the docroot
  kParSpin,  // E
  kRpcSpin,  // F
  kBackend,  // G, H: synchronous calls to the backend server
};

struct RequestType {
  char letter;             // 'A'..'F'; also the request_start type_char
  std::string_view path;   // URL path served
  std::string_view name;   // short name used in bodies and summaries
  RequestKind kind;
  // Spin durations in microseconds (Table 1); 0 where unused.
  //   kSpin:    spin_us[0] = the one spin
  //   kParSpin: spin_us[0] = worker, spin_us[1] = helper (concurrent)
  //   kRpcSpin: spin_us[0] = worker before, spin_us[1] = helper,
  //             spin_us[2] = worker after
  uint32_t spin_us[3];
  // kStatic: file size in bytes and its name inside the docroot.
  size_t file_bytes;
  std::string_view file_name;
  // kBackend: calls made to the backend, each a GET of kBackendPath.
  uint32_t backend_calls = 0;
};

// What a kBackend request asks the backend for (a second jackdaw-testserver).
inline constexpr std::string_view kBackendPath = "/tiny";

inline constexpr RequestType kRequestTypes[] = {
    {'A', "/longspin", "longspin", RequestKind::kSpin, {30000, 0, 0}, 0, ""},
    {'B', "/shortspin", "shortspin", RequestKind::kSpin, {15000, 0, 0}, 0, ""},
    {'C', "/small", "small", RequestKind::kStatic, {0, 0, 0}, 12 * 1024, "small.dat"},
    {'D', "/tiny", "tiny", RequestKind::kStatic, {0, 0, 0}, 5 * 1024, "tiny.dat"},
    {'E', "/parspin", "parspin", RequestKind::kParSpin, {15000, 15000, 0}, 0, ""},
    {'F', "/rpcspin", "rpcspin", RequestKind::kRpcSpin, {7500, 15000, 7250}, 0, ""},
    {'G', "/book", "book", RequestKind::kBackend, {0, 0, 0}, 0, "", 1},
    {'H', "/categories", "categories", RequestKind::kBackend, {0, 0, 0}, 0, "", 3},
};
inline constexpr size_t kNumRequestTypes = std::size(kRequestTypes);

// type_char passed to request_start for a URL that is not in the table.
inline constexpr char kUnknownTypeChar = 'X';

inline const RequestType* TypeByLetter(char letter) {
  for (const RequestType& t : kRequestTypes)
    if (t.letter == letter) return &t;
  return nullptr;
}

inline const RequestType* TypeByPath(std::string_view path) {
  for (const RequestType& t : kRequestTypes)
    if (t.path == path) return &t;
  return nullptr;
}

inline size_t TypeIndex(const RequestType* t) {
  return static_cast<size_t>(t - kRequestTypes);
}

}  // namespace jackdaw::testserver
