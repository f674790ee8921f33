#pragma once
// Small device helpers shared by the storage plugins' kernels. Host-safe.
#include <cstdint>

#include "kplace/common/host_device.h"

namespace kplace::plugins {

/** Position of `value` in sorted `list[0, n)`, or -1. */
KPLACE_HOST_DEVICE inline int32_t SortedFind(const int32_t* list, int32_t n, int32_t value) {
  int32_t lo = 0, hi = n;
  while (lo < hi) {
    int32_t mid = lo + (hi - lo) / 2;
    if (list[mid] < value) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo < n && list[lo] == value ? lo : -1;
}

}  // namespace kplace::plugins
