#include "kplace/model/quantity.h"

#include <limits>


namespace kplace {
namespace {

constexpr __int128 kNanosPerUnit = 1000000000;
// Anything larger saturates; Kubernetes caps quantities near 2^63 * 10^18.
constexpr __int128 kMaxNanos = static_cast<__int128>(1) << 120;


// The suffix as (base, exponent): value = number * base^exponent.
bool ParseSuffix(std::string_view s, int* base, int* exponent) {
  struct Entry { std::string_view name; int base; int exponent; };
  static constexpr Entry kSuffixes[] = {
      {"", 10, 0},    {"n", 10, -9},  {"u", 10, -6},  {"m", 10, -3},  {"k", 10, 3},
      {"M", 10, 6},   {"G", 10, 9},   {"T", 10, 12},  {"P", 10, 15},  {"E", 10, 18},
      {"Ki", 2, 10},  {"Mi", 2, 20},  {"Gi", 2, 30},  {"Ti", 2, 40},  {"Pi", 2, 50},
      {"Ei", 2, 60},
  };
  for (const Entry& e : kSuffixes) {
    if (s == e.name) { *base = e.base; *exponent = e.exponent; return true; }
  }
  // Decimal exponent form: e<int> or E<int>.
  if (s.size() >= 2 && (s[0] == 'e' || s[0] == 'E')) {
    size_t i = 1;
    bool negative = false;
    if (s[i] == '+' || s[i] == '-') { negative = s[i] == '-'; ++i; }
    if (i == s.size() || s.size() - i > 4) return false;
    int v = 0;
    for (; i < s.size(); ++i) {
      if (s[i] < '0' || s[i] > '9') return false;
      v = v * 10 + (s[i] - '0');
    }
    *base = 10;
    *exponent = negative ? -v : v;
    return true;
  }
  return false;
}

__int128 Saturate(__int128 v) { return v > kMaxNanos ? kMaxNanos : (v < -kMaxNanos ? -kMaxNanos : v); }

int64_t ClampToInt64(__int128 v) {
  if (v > std::numeric_limits<int64_t>::max()) return std::numeric_limits<int64_t>::max();
  if (v < std::numeric_limits<int64_t>::min()) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(v);
}

// ceil(a / b) for b > 0.
__int128 CeilDiv(__int128 a, __int128 b) {
  __int128 q = a / b;
  if (a % b != 0 && a > 0) ++q;
  return q;
}

}  // namespace

std::optional<Quantity> Quantity::Parse(std::string_view text) {
  std::string_view s = text;
  if (s.empty()) return std::nullopt;
  bool negative = false;
  if (s[0] == '+' || s[0] == '-') { negative = s[0] == '-'; s.remove_prefix(1); }
  // Digits, an optional fraction, then the suffix.
  __int128 digits = 0;   // all significant digits as an integer
  int fraction_digits = 0;
  int dropped_digits = 0;  // integer digits beyond our precision (value too large)
  bool any_digit = false, seen_dot = false, inexact_tail = false;
  size_t i = 0;
  for (; i < s.size(); ++i) {
    char c = s[i];
    if (c == '.') {
      if (seen_dot) return std::nullopt;
      seen_dot = true;
      continue;
    }
    if (c < '0' || c > '9') break;
    any_digit = true;
    if (digits > kMaxNanos) {
      if (seen_dot) { inexact_tail |= c != '0'; } else { ++dropped_digits; }
      continue;
    }
    digits = digits * 10 + (c - '0');
    if (seen_dot) ++fraction_digits;
  }
  if (!any_digit) return std::nullopt;
  int base = 10, exponent = 0;
  if (!ParseSuffix(s.substr(i), &base, &exponent)) return std::nullopt;

  // value = digits * 10^(dropped - fraction) * base^exponent, in nano-units, rounded up.
  __int128 num = digits;
  __int128 den = 1;
  int ten_power = dropped_digits - fraction_digits + 9;  // +9 for nano-units
  if (base == 10) ten_power += exponent;
  for (; ten_power > 0; --ten_power) { num = Saturate(num * 10); }
  for (; ten_power < 0; ++ten_power) {
    if (den > kMaxNanos) { num = 0; break; }  // far below a nano-unit: rounds to 0 or 1 below
    den *= 10;
  }
  if (base == 2) {
    for (int k = 0; k < exponent; ++k) num = Saturate(num * 2);
  }
  __int128 nanos = num == 0 && digits != 0 ? 1 : CeilDiv(num, den);
  if (inexact_tail && nanos * den == num) ++nanos;  // digits we could not hold round up
  // Kubernetes rounds values finer than a nano-unit up (away from zero for negatives).
  return FromNanos(negative ? -nanos : nanos);
}

int64_t Quantity::MilliValue() const {
  return ClampToInt64(CeilDiv(nanos_, kNanosPerUnit / 1000));
}

int64_t Quantity::Value() const { return ClampToInt64(CeilDiv(nanos_, kNanosPerUnit)); }

std::string Quantity::ToString() const {
  __int128 v = nanos_;
  std::string sign = v < 0 ? "-" : "";
  if (v < 0) v = -v;
  auto to_string = [](__int128 x) {
    if (x == 0) return std::string("0");
    std::string out;
    while (x > 0) { out.insert(out.begin(), static_cast<char>('0' + static_cast<int>(x % 10))); x /= 10; }
    return out;
  };
  if (v % kNanosPerUnit == 0) return sign + to_string(v / kNanosPerUnit);
  if (v % 1000000 == 0) return sign + to_string(v / 1000000) + "m";
  if (v % 1000 == 0) return sign + to_string(v / 1000) + "u";
  return sign + to_string(v) + "n";
}

}  // namespace kplace
