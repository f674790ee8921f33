#pragma once
// DynamicResources' host side, shared by the reference, the engine and the cycle: how a
// pod's claims are found (PreEnqueue and PreFilter), what PreFilter checks before the
// allocator would run, where kplace refuses (allocation needs ResourceSlices and the
// allocator, which are not modelled), and what PreBind and PostFilter write back to the
// claims. Upstream: pkg/scheduler/framework/plugins/dynamicresources/dynamicresources.go
// (PreEnqueue, foreachPodResourceClaim, PreFilter, Filter, PostFilter, bindClaim) and
// staging/src/k8s.io/dynamic-resource-allocation/resourceclaim (Name, IsForPod,
// IsReservedForPod). Host-only, host-safe (no Abseil, no nlohmann).
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "kplace/framework/host_plugin.h"
#include "kplace/framework/types.h"
#include "kplace/model/objects.h"

namespace kplace::plugins::dra {

constexpr char kName[] = "DynamicResources";
/** Filter's reason for a node outside an allocated claim's node selector. */
constexpr char kNotAvailable[] = "resourceclaim not available on the node";

/** ResourceClaims and DeviceClasses by key over an object set that changes in place (the
 *  scheduler's claim updates, watch events): a hit is checked against the list and any
 *  miss rebuilds the index, so it is never stale. */
class ResourceIndex {
 public:
  const ResourceClaim* FindClaim(const ObjectSet& objects, const std::string& namespace_, const std::string& name);
  const DeviceClass* FindClass(const ObjectSet& objects, const std::string& name);
  /** The DeviceClass that backs extended resource `resource` (its extendedResourceName, or
   *  the implicit deviceclass.resource.kubernetes.io/<class>); null when none. */
  const DeviceClass* ClassForExtendedResource(const ObjectSet& objects, const std::string& resource);

 private:
  template <typename T>
  struct Index {
    const std::vector<T>* list = nullptr;
    std::unordered_map<std::string, size_t> at;
  };
  Index<ResourceClaim> claims_;
  Index<DeviceClass> classes_;
};

/** The claims foreachPodResourceClaim found, in spec order (pod claims that need no claim
 *  are left out), or the first reason one cannot be used (UnschedulableAndUnresolvable
 *  with upstream's text). */
struct PodClaims {
  PluginStatus status;
  std::vector<const ResourceClaim*> claims;
};

/** PreEnqueue and the start of PreFilter: each pod claim's ResourceClaim by name, or the
 *  one generated from its template (status.resourceClaimStatuses), must exist, not be
 *  terminating and, when generated, be controlled by the pod. */
PodClaims ResolveClaims(const Pod& pod, const ObjectSet& objects, ResourceIndex* index);

/** What PreFilter decided for a pod and what Filter needs of it. */
struct PreFilterPlan {
  PluginStatus status;  // Skip (no claims), Success, a rejection, an Error or a refusal
  std::vector<const ResourceClaim*> claims;
  /** Per claim: the allocation's node selector when it is allocated with one (Filter keeps
   *  the pod off other nodes), else null. */
  std::vector<const NodeSelector*> available_on;
  /** The first claim that still needs allocation, or null: Filter refuses on any node it
   *  reaches, where upstream's allocator would run. */
  const ResourceClaim* to_allocate = nullptr;
};

/** PreFilter: the claims (ResolveClaims), DRA-backed extended resources (refused under
 *  DRAExtendedResource), then per claim its allocation's node selector or, for a claim to
 *  allocate, its requests' device classes (a missing class rejects the pod). */
PreFilterPlan PreFilter(const Pod& pod, const ObjectSet& objects, const FeatureGates& gates, ResourceIndex* index);

/** Filter on `node` after PreFilter: Success, the refusal to allocate, or kNotAvailable.
 *  `unavailable` (when given) gets the indices of claims whose selector `node` fails. */
PluginStatus Filter(const PreFilterPlan& plan, const Node& node, std::vector<int32_t>* unavailable = nullptr);

/** "kplace: allocating ResourceClaim <ns>/<name> is not supported" (a refusal). */
PluginStatus AllocationRefusal(const ResourceClaim& claim);

/** IsReservedForPod: some status.reservedFor entry has the pod's UID. */
bool IsReservedForPod(const Pod& pod, const ResourceClaim& claim);

/** PreBind (bindClaim) for `pod`, placed: every claim of the plan not reserved for the pod
 *  yet, with the pod added to status.reservedFor as the scheduler writes it. A claim whose
 *  reservedFor is full makes the API server refuse that write, which fails the binding:
 *  kplace refuses then (`*refusal`) and returns nothing. */
std::vector<ResourceClaim> ReserveClaims(const Pod& pod, const PreFilterPlan& plan, PluginStatus* refusal);

/** PostFilter's outcome: its status and, when it deallocates, the claim as written. */
struct PostFilterOutcome {
  PluginStatus status;  // always Unschedulable upstream, or an Error
  std::optional<ResourceClaim> deallocated;
};

/** PostFilter after a failed cycle. `ran_prefilter`: DynamicResources' PreFilter ran (an
 *  earlier plugin's UnschedulableAndUnresolvable ends PreFilter before it, and then its
 *  cycle state is missing: upstream's PostFilter fails with "not found", which ends
 *  PostFilter before DefaultPreemption). `unavailable`: claim indices some node's Filter
 *  found unavailable. With none, or none that only this pod holds, "still not
 *  schedulable"; else the lowest such claim is deallocated (upstream picks one at random
 *  from a map; kplace fixes the choice). */
PostFilterOutcome PostFilter(const Pod& pod, bool ran_prefilter, const PreFilterPlan& plan,
                             const std::vector<int32_t>& unavailable);

/** DynamicResources' steps on the host: PreEnqueue holds a pod back until its claims can
 *  be found, PreBind reserves its claims for it (status.reservedFor), PostFilter
 *  deallocates a claim only the pod holds that some node found unavailable. */
class HostSteps final : public HostPlugin {
 public:
  explicit HostSteps(FeatureGates gates) : gates_(std::move(gates)) {}
  const std::string& name() const override { return name_; }
  PluginStatus PreEnqueue(const Pod& pod, const ObjectSet& objects) override;
  bool WritesAtBind(const Pod& pod) const override { return !pod.resource_claims.empty(); }
  PluginStatus PreBind(const Pod& pod, const ObjectSet& objects, ObjectSet* writes) override;
  PluginStatus PostFilter(const Pod& pod, const ObjectSet& objects, const PostFilterInput& in,
                          ObjectSet* writes) override;

 private:
  const std::string name_ = kName;
  FeatureGates gates_;
  ResourceIndex index_;  // claim and class lookups, checked against the lists on each use
};

}  // namespace kplace::plugins::dra
