#pragma once
// Status helpers. Debian's Abseil 20220623 has no status macros, so we carry ours.
#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define KPLACE_CONCAT_INNER_(a, b) a##b
#define KPLACE_CONCAT_(a, b) KPLACE_CONCAT_INNER_(a, b)

#define KPLACE_RETURN_IF_ERROR(expr)                 \
  do {                                               \
    ::absl::Status kplace_status_ = (expr);          \
    if (!kplace_status_.ok()) return kplace_status_; \
  } while (0)

#define KPLACE_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                  \
  if (!tmp.ok()) return tmp.status();                 \
  lhs = std::move(*tmp)

#define KPLACE_ASSIGN_OR_RETURN(lhs, expr) \
  KPLACE_ASSIGN_OR_RETURN_IMPL_(KPLACE_CONCAT_(kplace_statusor_, __LINE__), lhs, expr)
