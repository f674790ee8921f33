#pragma once
// Integer arithmetic with defined results at the extremes the API admits (quantities up to
// int64's range): sums of requests saturate, and score products wrap as Go's int64 does, so
// the engine and the reference agree and nothing is undefined. Host-safe and device-safe.
#include <cstdint>
#include <limits>

#include "kplace/common/host_device.h"

namespace kplace {

/** a + b, clamped to int64's range. */
KPLACE_HOST_DEVICE inline int64_t SaturatingAdd(int64_t a, int64_t b) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max(), kMin = std::numeric_limits<int64_t>::min();
  if (b > 0 && a > kMax - b) return kMax;
  if (b < 0 && a < kMin - b) return kMin;
  return a + b;
}

/** a * b as Go's int64 computes it (two's-complement wrap-around). */
KPLACE_HOST_DEVICE inline int64_t GoMul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}

/** a + b as Go's int64 computes it (two's-complement wrap-around). */
KPLACE_HOST_DEVICE inline int64_t GoAdd(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}

/** x / y for x >= 0 and y > 0, as integer division truncates it. Through a double when
 *  x + y < 2^53: x and y are then exact, and the rounded quotient of x = k*y + r
 *  (r < y) stays below k + 1, as k + 1 - x/y >= 1/y exceeds half an ulp of k + 1 there;
 *  a 64-bit integer divide costs several times a double one. Else (or outside the
 *  domain) the integer divide. */
KPLACE_HOST_DEVICE inline int64_t NonNegativeDiv(int64_t x, int64_t y) {
  constexpr int64_t kExact = int64_t{1} << 53;
  if (x >= 0 && y > 0 && x < kExact && y < kExact - x) {
    return static_cast<int64_t>(static_cast<double>(x) / static_cast<double>(y));
  }
  return x / y;
}

/** int64(x) of a float64 as Go computes it on amd64: truncation toward zero, and the minimum
 *  int64 for NaN and for values outside int64's range (where a C++ cast is undefined). */
KPLACE_HOST_DEVICE inline int64_t GoFloatToInt64(double x) {
  constexpr double kTwo63 = 9223372036854775808.0;
  if (x >= -kTwo63 && x < kTwo63) return static_cast<int64_t>(x);
  return std::numeric_limits<int64_t>::min();
}

}  // namespace kplace
