#pragma once
// ImageLocality: node images as CSR rows of (interned name, size), the pod's image list
// resolved to those ids with each image's spread, and the per-node Score both backends
// run (small-plugins.md §2). Host-safe.
#include <cstdint>

#include "kplace/common/host_device.h"
#include "kplace/common/int_math.h"
#include "kplace/framework/types.h"

namespace kplace::plugins {

constexpr int64_t kImageMiB = 1024 * 1024;
constexpr int64_t kImageMinThreshold = 23 * kImageMiB;
constexpr int64_t kImageMaxContainerThreshold = 1000 * kImageMiB;

/** Row i holds node i's image names sorted by id, each once, with its size. */
struct ImageNodeView {
  const int32_t* offsets;  // num_nodes + 1
  const int32_t* ids;
  const int64_t* sizes;
};

/** The pod's images that some node has (duplicates kept), and how many it names. */
struct ImagePodParams {
  const int32_t* ids;
  const double* spread;  // nodes having the image / all nodes
  int32_t count;
  int32_t num_images;  // init containers + containers + image volumes
};

/** calculatePriority: the summed size clamped to [23 MiB, 1000 MiB * images], scaled to 0..100. */
KPLACE_HOST_DEVICE inline int64_t ImageLocalityPriority(int64_t sum, int32_t num_images) {
  const int64_t max_threshold = kImageMaxContainerThreshold * num_images;
  if (sum < kImageMinThreshold) {
    sum = kImageMinThreshold;
  } else if (sum > max_threshold) {
    sum = max_threshold;
  }
  // The product passes int64 only past 88 million images; Go would wrap it, and so do we.
  return GoMul(kMaxNodeScore, sum - kImageMinThreshold) / (max_threshold - kImageMinThreshold);
}

KPLACE_HOST_DEVICE inline int64_t ImageLocalityScoreNode(const ImageNodeView& v, const ImagePodParams& p, int32_t i) {
  int64_t sum = 0;
  const int32_t begin = v.offsets[i], end = v.offsets[i + 1];
  for (int32_t j = 0; j < p.count; ++j) {
    const int32_t id = p.ids[j];
    int32_t lo = begin, hi = end;
    while (lo < hi) {
      int32_t mid = lo + (hi - lo) / 2;
      if (v.ids[mid] < id) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    // The spread-scaled size: one double multiply, converted and summed as Go does (sizeBytes
    // is any int64 the kubelet reports).
    if (lo < end && v.ids[lo] == id) sum = GoAdd(sum, GoFloatToInt64(static_cast<double>(v.sizes[lo]) * p.spread[j]));
  }
  return ImageLocalityPriority(sum, p.num_images);
}

}  // namespace kplace::plugins
