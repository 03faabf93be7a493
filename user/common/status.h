// Recoverable errors (STYLE rule 11): functions that can fail because of the
// user's input or the machine return Status / StatusOr<T>; the message is one
// line that names the cause and, where there is one, the fix. Broken
// invariants use JDW_CHECK instead; bad events bump a named counter.
#pragma once

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>

namespace jackdaw {

class [[nodiscard]] Status {
 public:
  Status() = default;
  static Status Ok() { return Status(); }
  static Status Error(std::string message, int exit_code = 1) {
    Status s;
    s.ok_ = false;
    s.message_ = std::move(message);
    s.exit_code_ = exit_code;
    return s;
  }
  bool ok() const { return ok_; }
  const std::string& message() const { return message_; }
  // Exit code a command should end with for this error (2: permissions /
  // environment, 1: everything else).
  int exit_code() const { return exit_code_; }

 private:
  bool ok_ = true;
  std::string message_;
  int exit_code_ = 0;
};

// printf-style error constructor.
[[gnu::format(printf, 1, 2)]] inline Status ErrStatus(const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  return Status::Error(buf);
}

template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  StatusOr(Status status) : status_(std::move(status)) {  // NOLINT
    if (status_.ok()) status_ = Status::Error("internal: StatusOr built from OK status");
  }
  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace jackdaw

#define JDW_CONCAT_INNER(a, b) a##b
#define JDW_CONCAT(a, b) JDW_CONCAT_INNER(a, b)

#define RETURN_IF_ERROR(expr)                         \
  do {                                                \
    ::jackdaw::Status jdw_status_ = (expr);           \
    if (!jdw_status_.ok()) return jdw_status_;        \
  } while (0)

#define ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                          \
  if (!tmp.ok()) return tmp.status();         \
  lhs = std::move(tmp.value())

#define ASSIGN_OR_RETURN(lhs, expr) \
  ASSIGN_OR_RETURN_IMPL(JDW_CONCAT(jdw_statusor_, __LINE__), lhs, expr)

// Broken invariant: a bug in jackdaw, not in the input.
#define JDW_CHECK(cond)                                                      \
  do {                                                                       \
    if (!(cond)) {                                                           \
      fprintf(stderr, "jackdaw: internal error: %s:%d: CHECK(%s) failed\n", \
              __FILE__, __LINE__, #cond);                                    \
      abort();                                                               \
    }                                                                        \
  } while (0)
