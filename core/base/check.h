// Always-on assertions and the small Status helpers Abseil 20220623 lacks.
//
// KAIROS_CHECK is for invariants whose violation means a bug in Kairos: it is
// never compiled out (release builds included), prints the condition, file and
// line, and aborts. Expected failures (bad input, an unavailable store) travel
// as absl::Status instead; never use KAIROS_CHECK for them.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace kairos::detail {
[[noreturn]] inline void check_failed(const char* cond, const char* file, int line,
                                      const char* msg) {
  std::fprintf(stderr, "KAIROS_CHECK failed: %s at %s:%d%s%s\n", cond, file, line,
               msg[0] ? ": " : "", msg);
  std::fflush(stderr);
  std::abort();
}
}  // namespace kairos::detail

#define KAIROS_CHECK(cond)                                                      \
  do {                                                                          \
    if (!(cond)) ::kairos::detail::check_failed(#cond, __FILE__, __LINE__, ""); \
  } while (0)

#define KAIROS_CHECK_MSG(cond, msg)                                              \
  do {                                                                           \
    if (!(cond)) ::kairos::detail::check_failed(#cond, __FILE__, __LINE__, msg); \
  } while (0)

#define KAIROS_CONCAT_INNER(a, b) a##b
#define KAIROS_CONCAT(a, b) KAIROS_CONCAT_INNER(a, b)

// Returns the status from the enclosing function if `expr` is not OK.
#define KAIROS_RETURN_IF_ERROR(expr)                 \
  do {                                               \
    ::absl::Status kairos_status_ = (expr);          \
    if (!kairos_status_.ok()) return kairos_status_; \
  } while (0)

// `KAIROS_ASSIGN_OR_RETURN(auto x, MakeX());` assigns the value of a StatusOr
// or returns its status from the enclosing function.
#define KAIROS_ASSIGN_OR_RETURN(lhs, expr) \
  KAIROS_ASSIGN_OR_RETURN_IMPL(KAIROS_CONCAT(kairos_statusor_, __LINE__), lhs, expr)
#define KAIROS_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                 \
  if (!tmp.ok()) return std::move(tmp).status();     \
  lhs = std::move(tmp).value()
