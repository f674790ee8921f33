#pragma once
// One kernel source, two systems: this header picks Thrust's CUDA or OpenMP system
// for the translation unit that includes it, and names the backend namespace.
#include <thrust/execution_policy.h>
#include "kplace/common/host_device.h"
#include <thrust/copy.h>
#include <thrust/fill.h>
#include <thrust/transform.h>
#include <thrust/reduce.h>
#include <thrust/transform_reduce.h>
#include <thrust/functional.h>

#include <algorithm>
#include <vector>

#include "kplace/engine/plugin.h"
#include <thrust/iterator/counting_iterator.h>

#if defined(KPLACE_BACKEND_CUDA)
#include <thrust/system/cuda/execution_policy.h>
#include <thrust/system/cuda/vector.h>
#define KPLACE_BACKEND_NS cuda
#define KPLACE_BACKEND_ID ::kplace::engine::Backend::kCuda
namespace kplace::cuda {
template <typename T>
using vector = thrust::cuda::vector<T>;
inline auto policy() { return thrust::cuda::par; }
}  // namespace kplace::cuda
#elif defined(KPLACE_BACKEND_OMP)
#include <omp.h>
#include <thrust/system/omp/execution_policy.h>
#include <thrust/system/omp/vector.h>
#define KPLACE_BACKEND_NS omp
#define KPLACE_BACKEND_ID ::kplace::engine::Backend::kOmp
namespace kplace::omp {
template <typename T>
using vector = thrust::omp::vector<T>;
inline auto policy() { return thrust::omp::par; }
}  // namespace kplace::omp
#else
#error "kernels are compiled with KPLACE_BACKEND_CUDA or KPLACE_BACKEND_OMP"
#endif

namespace kplace::KPLACE_BACKEND_NS {

/** On the omp backend, per-node plugin work over fewer nodes than this runs on the calling
 *  thread: an OpenMP parallel region costs a futex round trip to wake the other threads
 *  (OMP_WAIT_POLICY=passive), tens of microseconds on a busy machine, more than a thread
 *  saves on the tens of nanoseconds per node a plugin spends. So a pod's feasible window
 *  (5% of 100,000 nodes at the most) and a few bound nodes stay on one thread, and passes
 *  over a large cluster's every node go parallel. (SchedulingHeterogeneous at 50,000 nodes,
 *  every pod its own run of windows of ~2,500 nodes: 2,048 here cost a fifth of its time.) */
constexpr int64_t kOmpSerialBelow = 16384;
/** The same for work of a few instructions per element (fills, gathers, merges). */
constexpr int64_t kOmpLightSerialBelow = 65536;

/** Calls `f(policy)` with the execution policy for work over `n` elements: policy(), or
 *  on the omp backend thrust::seq below `serial_below` (backend memory is host memory
 *  there). The cuda backend always gets policy(). */
template <typename F>
void WithPolicy(int64_t n, F&& f, int64_t serial_below = kOmpSerialBelow) {
#if defined(KPLACE_BACKEND_OMP)
  if (n < serial_below) {
    f(thrust::seq);
    return;
  }
#endif
  f(policy());
}

/** Resizes backend vector `v` to `n` elements. On omp a thrust vector initializes the
 *  elements it gains in a parallel region, which wakes the other threads (a futex round
 *  trip, tens of microseconds on a busy machine) for a few elements: a compiled pod's
 *  parameter blocks, a window's scratch. That work runs on the calling thread. */
template <typename T>
void Resize(vector<T>* v, size_t n) {
#if defined(KPLACE_BACKEND_OMP)
  if (n <= v->size()) {
    v->resize(n);
    return;
  }
  const int threads = omp_get_max_threads();
  if (static_cast<int64_t>(n - v->size()) < kOmpLightSerialBelow) omp_set_num_threads(1);
  v->resize(n);
  omp_set_num_threads(threads);
#else
  v->resize(n);
#endif
}

/** Copies a host vector into backend memory. */
template <typename T>
void Upload(const std::vector<T>& host, vector<T>* out) {
  // Thrust's copies bind a reference to the first element even for an empty range.
  if (host.empty()) {
    out->clear();
    return;
  }
#if defined(KPLACE_BACKEND_OMP)
  Resize(out, host.size());
  std::copy(host.begin(), host.end(), thrust::raw_pointer_cast(out->data()));
#else
  out->assign(host.begin(), host.end());
#endif
}

template <typename T>
T* Ptr(vector<T>& v) { return thrust::raw_pointer_cast(v.data()); }
template <typename T>
const T* Ptr(const vector<T>& v) { return thrust::raw_pointer_cast(v.data()); }

/** Sets `*v` to `n` copies of `value`. */
template <typename T>
void Fill(vector<T>* v, int64_t n, T value) {
  Resize(v, static_cast<size_t>(n));
  T* data = thrust::raw_pointer_cast(v->data());
  WithPolicy(n, [&](auto p) { thrust::fill(p, data, data + n, value); }, kOmpLightSerialBelow);
}

/** Backend scratch of at least `n` elements, grown only, as a raw pointer: buffers reused
 *  pod after pod, since growing a thrust vector initializes the new elements (on omp, in a
 *  parallel region). */
template <typename T>
T* Scratch(vector<T>* v, int64_t n) {
  if (static_cast<int64_t>(v->size()) < n) Resize(v, static_cast<size_t>(n));
  return thrust::raw_pointer_cast(v->data());
}

/** Copies `host` into the front of backend scratch `*v` (grown as Scratch). */
template <typename T>
T* UploadScratch(const std::vector<T>& host, vector<T>* v) {
  T* p = Scratch(v, static_cast<int64_t>(host.size()));
  if (host.empty()) return p;
#if defined(KPLACE_BACKEND_OMP)
  std::copy(host.begin(), host.end(), p);
#else
  thrust::copy(host.begin(), host.end(), v->begin());
#endif
  return p;
}

/** Sets p[0, n) of backend memory to `value`. */
template <typename T>
void FillN(T* p, int64_t n, T value) {
  if (n <= 0) return;
  WithPolicy(n, [&](auto pol) { thrust::fill(pol, p, p + n, value); }, kOmpLightSerialBelow);
}

/** Copies the first `n` elements of backend vector `v` to host memory at `out`. */
template <typename T>
void Download(const vector<T>& v, int64_t n, T* out) {
  if (n <= 0) return;
#if defined(KPLACE_BACKEND_OMP)
  std::copy(Ptr(v), Ptr(v) + n, out);
#else
  thrust::copy(v.begin(), v.begin() + n, out);
#endif
}

/** A node column: the host copy the plugin reads while compiling, and the backend copy
 *  kernels read. Set() keeps both in step on bind. */
template <typename T>
struct Column {
  std::vector<T> host;
  vector<T> dev;

  void Upload() { ::kplace::KPLACE_BACKEND_NS::Upload(host, &dev); }
  void Set(size_t i, T v) {
    host[i] = v;
#if defined(KPLACE_BACKEND_OMP)
    thrust::raw_pointer_cast(dev.data())[i] = v;  // host memory: no Thrust reference proxy (UBSan flags its null policy)
#else
    dev[i] = v;
#endif
  }
  const T* ptr() const { return thrust::raw_pointer_cast(dev.data()); }
  /** One more entry at the end (a node that joins). The backend copy grows by doubling:
   *  each growth is a backend operation (a parallel region on omp), and readers index it by
   *  node, never by its size. */
  void Push(T v) {
    host.push_back(v);
    if (dev.size() < host.size()) Resize(&dev, std::max(host.size(), 2 * dev.size()));
    Set(host.size() - 1, v);
  }
};

/** out[i] = f(i) for every node index i in [0, n). */
template <typename Out, typename F>
void ForEachNode(int32_t n, Out* out, F f) {
  if (n <= 0) return;
  WithPolicy(n, [&](auto p) {
    thrust::transform(p, thrust::counting_iterator<int32_t>(0), thrust::counting_iterator<int32_t>(n), out, f);
  });
}

/** out[k] = f(nodes[k]) for the listed nodes. */
template <typename Out, typename F>
void ForListedNodes(const engine::NodeIndex* nodes, int32_t count, Out* out, F f) {
  if (count <= 0) return;
  WithPolicy(count, [&](auto p) { thrust::transform(p, nodes, nodes + count, out, f); });
}

/** ForListedNodes that, on the omp backend's calling thread, first calls `ahead(node)` for
 *  the node kListedAhead places further down the list: a visit order far apart in the
 *  columns misses the cache on each node's first read, and `ahead` prefetches what f
 *  reads there (KPLACE_PREFETCH), so several misses are under way at once. */
constexpr int32_t kListedAhead = 12;
template <typename Out, typename F, typename Ahead>
void ForListedNodesAhead(const engine::NodeIndex* nodes, int32_t count, Out* out, F f, Ahead ahead) {
#if defined(KPLACE_BACKEND_OMP)
  if (count > 0 && count < kOmpSerialBelow) {
    const int32_t head = count > kListedAhead ? count - kListedAhead : 0;
    for (int32_t k = 0; k < head; ++k) {
      ahead(nodes[k + kListedAhead]);
      out[k] = f(nodes[k]);
    }
    for (int32_t k = head; k < count; ++k) out[k] = f(nodes[k]);
    return;
  }
#endif
  (void)ahead;
  ForListedNodes(nodes, count, out, f);
}

/** Prefetches the cache line at `p` for reading (host code; nothing on the device). */
#if defined(KPLACE_BACKEND_OMP)
#define KPLACE_PREFETCH(p) __builtin_prefetch((p), 0, 3)
#else
#define KPLACE_PREFETCH(p) ((void)(p))
#endif

/** `op` folded over f(0), ..., f(count - 1), from `init`. On omp a plain loop over host
 *  memory: Thrust's omp reduction binds a reference through a null execution policy (UBSan
 *  reports it), and the windows reduced here are a pod's scored nodes. */
template <typename T, typename F, typename Op>
T ReduceNodes(int32_t count, F f, T init, Op op) {
  if (count <= 0) return init;
#if defined(KPLACE_BACKEND_OMP)
  T acc = init;
  for (int32_t i = 0; i < count; ++i) acc = op(acc, f(i));
  return acc;
#else
  return thrust::transform_reduce(policy(), thrust::counting_iterator<int32_t>(0),
                                  thrust::counting_iterator<int32_t>(count), f, init, op);
#endif
}

struct ScoreAtFn {
  const int64_t* scores;
  KPLACE_HOST_DEVICE int64_t operator()(int32_t i) const { return scores[i]; }
};

/** Largest of `count` scores (0 when empty). */
inline int64_t MaxScore(const int64_t* scores, int32_t count) {
  return ReduceNodes(count, ScoreAtFn{scores}, int64_t{0}, thrust::maximum<int64_t>());
}

struct DefaultNormalizeFn {
  int64_t max;
  bool reverse;
  KPLACE_HOST_DEVICE int64_t operator()(int64_t s) const {
    if (max == 0) return reverse ? kMaxNodeScore : s;
    int64_t n = kMaxNodeScore * s / max;
    return reverse ? kMaxNodeScore - n : n;
  }
};

/** Upstream's DefaultNormalizeScore over the scored nodes. */
inline void DefaultNormalize(int64_t* scores, int32_t count, bool reverse) {
  if (count <= 0) return;
  int64_t max = MaxScore(scores, count);
  WithPolicy(count, [&](auto p) { thrust::transform(p, scores, scores + count, scores, DefaultNormalizeFn{max, reverse}); });
}

}  // namespace kplace::KPLACE_BACKEND_NS
