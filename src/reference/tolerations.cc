#include "kplace/reference/tolerations.h"

#include <cerrno>
#include <cstdlib>

namespace kplace::reference {

bool ParseDecimalInteger(const std::string& s, int64_t* out) {
  // Shape first: optional '-', then "0" alone or a non-zero digit followed by digits.
  size_t i = 0;
  if (!s.empty() && s[0] == '-') i = 1;
  if (i == s.size()) return false;
  for (size_t k = i; k < s.size(); ++k) {
    if (s[k] < '0' || s[k] > '9') return false;
  }
  if (s[i] == '0' && (s.size() != 1)) return false;  // leading zeros and "-0"
  // Then the range, as a base-10 int64 parse.
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno == ERANGE || end != s.c_str() + s.size()) return false;
  *out = static_cast<int64_t>(v);
  return true;
}

bool ToleratesTaint(const Toleration& t, const Taint& x, bool comparison_operators) {
  if (!t.effect.empty() && t.effect != x.effect) return false;
  if (!t.key.empty() && t.key != x.key) return false;
  if (t.op.empty() || t.op == "Equal") return t.value == x.value;
  if (t.op == "Exists") return true;
  if (t.op == "Lt" || t.op == "Gt") {
    if (!comparison_operators) return false;
    int64_t toleration_value = 0, taint_value = 0;
    if (!ParseDecimalInteger(t.value, &toleration_value) || !ParseDecimalInteger(x.value, &taint_value)) return false;
    return t.op == "Lt" ? taint_value < toleration_value : taint_value > toleration_value;
  }
  return false;
}

bool TolerationsTolerateTaint(const std::vector<Toleration>& list, const Taint& x, bool comparison_operators) {
  for (const Toleration& t : list) {
    if (ToleratesTaint(t, x, comparison_operators)) return true;
  }
  return false;
}

}  // namespace kplace::reference
