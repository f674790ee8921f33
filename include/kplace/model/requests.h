#pragma once
// A pod's effective resource request and a node's aggregates, as NodeResourcesFit and
// BalancedAllocation compute them (noderesources.md §2-§4). Host-safe.
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "kplace/model/objects.h"

namespace kplace {

/** The resource-name classes of noderesources.md §2. */
bool IsExtendedResourceName(std::string_view name);
bool IsHugePageResourceName(std::string_view name);
bool IsPrefixedNativeResourceName(std::string_view name);
/** Extended, hugepages, prefixed-native or attachable-volumes-*. */
bool IsScalarResourceName(std::string_view name);

/** The non-zero defaults that scoring inserts per container (100m cpu, 200Mi memory). */
const ResourceList& NonZeroDefaults();

/** R(pod; defaults, pod_level): containers summed, init containers as a running max with
 *  sidecars, pod-level override, overhead. `defaults` may be null. */
ResourceList PodRequests(const Pod& pod, const ResourceList* defaults, bool pod_level_resources);

/** Integer request: cpu in millicores, everything else in units, scalars by name. */
struct Resource {
  int64_t milli_cpu = 0;
  int64_t memory = 0;
  int64_t ephemeral_storage = 0;
  int64_t allowed_pods = 0;  // node allocatable only
  std::map<std::string, int64_t> scalars;

  /** Converts a ResourceList (cpu rounded up to millis, others up to units); `pods` only
   *  when `keep_pods`; names that are neither first-class nor scalar are dropped. */
  static Resource From(const ResourceList& list, bool keep_pods);
  void Add(const Resource& o);
  /** The amount of `name` (cpu in millis), 0 when absent. */
  int64_t Get(std::string_view name) const;
};

/** A node's aggregates over its bound pods (§4). */
struct NodeResources {
  Resource allocatable;
  Resource requested;
  int64_t non_zero_milli_cpu = 0;
  int64_t non_zero_memory = 0;
  int64_t pod_count = 0;

  void AddPod(const Pod& pod, bool pod_level_resources);
  /** Adds what one pod adds (its AddPod on an empty NodeResources): the same sums as
   *  AddPod of that pod, since every sum saturates alike. */
  void Add(const NodeResources& pod);
};

/** True when `a` and `b` request exactly the same (every field PodRequests reads), so
 *  their NodeResources contributions are equal. */
bool SameRequests(const Pod& a, const Pod& b);

NodeResources ComputeNodeResources(const Node& node, const std::vector<const Pod*>& pods,
                                   bool pod_level_resources);

/** A resource a pod asks more of than a node has free (upstream's InsufficientResource). */
struct InsufficientResource {
  std::string resource;    // "pods", "cpu", "memory", "ephemeral-storage" or a scalar's name
  int64_t requested = 0;   // cpu in millicores, the others in units (pods: 1)
  int64_t used = 0;        // what the node's pods request
  int64_t capacity = 0;    // the node's allocatable
};

/** @brief NodeResourcesFit's check (noderesources.md §5): "pods" when the node holds its
 *  allocatable pod count already, then each of cpu, memory, ephemeral-storage and the
 *  scalars (by name) that `request` asks more of than is free; a request of nothing checks
 *  no resource. Scalars for which `ignored` says true are not checked. */
std::vector<InsufficientResource> InsufficientResources(const Resource& request, const NodeResources& node,
                                                        const std::function<bool(const std::string&)>& ignored);

/** Its reason as upstream words it: "Too many pods" or "Insufficient <resource>". */
std::string InsufficientReason(const InsufficientResource& r);
/** Whether `reason` is one InsufficientReason gives. */
bool IsInsufficientReason(const std::string& reason);

}  // namespace kplace
