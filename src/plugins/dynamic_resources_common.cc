#include "kplace/plugins/dynamic_resources_common.h"

#include <algorithm>

#include "kplace/common/strings.h"
#include "kplace/model/decode.h"
#include "kplace/model/requests.h"
#include "kplace/model/validation.h"
#include "kplace/plugins/node_affinity_common.h"

namespace kplace::plugins::dra {
namespace {

constexpr char kDeviceClassPrefix[] = "deviceclass.resource.kubernetes.io/";

PluginStatus Unresolvable(std::string reason) {
  return PluginStatus::Make(Code::kUnschedulableAndUnresolvable, std::move(reason));
}

template <typename T, typename Key>
const T* Find(const std::vector<T>& list, const std::string& key, Key key_of,
              std::unordered_map<std::string, size_t>* at, const std::vector<T>** built_for) {
  for (int pass = 0; pass < 2; ++pass) {
    if (pass == 1 || *built_for != &list) {
      at->clear();
      for (size_t i = 0; i < list.size(); ++i) at->emplace(key_of(list[i]), i);
      *built_for = &list;
    }
    auto it = at->find(key);
    if (it != at->end() && it->second < list.size() && key_of(list[it->second]) == key) return &list[it->second];
  }
  return nullptr;
}

// metav1.IsControlledBy: the first controller reference names the owner's UID.
bool IsControlledBy(const ObjectMeta& object, const ObjectMeta& owner) {
  for (const OwnerReference& ref : object.owner_references) {
    if (ref.controller) return ref.uid == owner.uid;
  }
  return false;
}

// schedutil.IsDRAExtendedResourceName.
bool IsDraExtendedResourceName(const std::string& name) {
  return IsExtendedResourceName(name) || name.rfind(kDeviceClassPrefix, 0) == 0;
}

// validateDeviceClass: `class_name` exists (a missing one waits for a DeviceClass event).
PluginStatus ValidateDeviceClass(const ObjectSet& objects, ResourceIndex* index, const std::string& class_name,
                                 const std::string& request) {
  if (class_name.empty()) return PluginStatus::Error(StrCat("request ", request, ": unsupported request type"));
  if (!index->FindClass(objects, class_name)) {
    return Unresolvable(StrCat("request ", request, ": device class ", class_name, " does not exist"));
  }
  return PluginStatus::Success();
}

}  // namespace

const ResourceClaim* ResourceIndex::FindClaim(const ObjectSet& objects, const std::string& namespace_,
                                              const std::string& name) {
  return Find(objects.resource_claims, StrCat(namespace_, "/", name),
              [](const ResourceClaim& c) { return ObjectKey(c.meta); }, &claims_.at, &claims_.list);
}

const DeviceClass* ResourceIndex::FindClass(const ObjectSet& objects, const std::string& name) {
  return Find(objects.device_classes, name, [](const DeviceClass& c) { return c.meta.name; }, &classes_.at,
              &classes_.list);
}

const DeviceClass* ResourceIndex::ClassForExtendedResource(const ObjectSet& objects, const std::string& resource) {
  // The extended-resource cache maps both names; an explicit name is looked for first.
  for (const DeviceClass& c : objects.device_classes) {
    if (c.extended_resource_name == resource) return &c;
  }
  if (resource.rfind(kDeviceClassPrefix, 0) == 0) return FindClass(objects, resource.substr(sizeof(kDeviceClassPrefix) - 1));
  return nullptr;
}

PodClaims ResolveClaims(const Pod& pod, const ObjectSet& objects, ResourceIndex* index) {
  PodClaims out;
  for (const PodResourceClaim& pc : pod.resource_claims) {
    // resourceclaim.Name.
    std::string name;
    const bool generated = pc.resource_claim_name.empty() && !pc.resource_claim_template_name.empty();
    if (!pc.resource_claim_name.empty()) {
      name = pc.resource_claim_name;
    } else if (generated) {
      auto st = std::find_if(pod.resource_claim_statuses.begin(), pod.resource_claim_statuses.end(),
                             [&](const PodResourceClaimStatus& s) { return s.name == pc.name; });
      if (st == pod.resource_claim_statuses.end()) {
        out.status = Unresolvable(StrCat("Pod ", ObjectKey(pod.meta), ": ResourceClaim not created yet"));
        return out;
      }
      if (!st->resource_claim_name) continue;  // intentionally not created: nothing to use
      name = *st->resource_claim_name;
    } else {
      out.status = Unresolvable(StrCat("Pod ", ObjectKey(pod.meta), ", spec.resourceClaim ", pc.name,
                                       ": none of the supported fields are set"));
      return out;
    }
    // The claim tracker's assume cache (description "ResourceClaim") reports a miss as
    // assumecache.NotFoundError.
    const ResourceClaim* claim = index->FindClaim(objects, pod.meta.namespace_, name);
    if (!claim) {
      out.status = Unresolvable(StrCat("could not find ResourceClaim ", GoQuote(StrCat(pod.meta.namespace_, "/", name))));
      return out;
    }
    if (!claim->meta.deletion_timestamp.empty()) {
      out.status = Unresolvable(StrCat("resourceclaim ", GoQuote(claim->meta.name), " is being deleted"));
      return out;
    }
    if (generated && (claim->meta.namespace_ != pod.meta.namespace_ || !IsControlledBy(claim->meta, pod.meta))) {
      out.status = Unresolvable(StrCat("ResourceClaim ", ObjectKey(claim->meta), " was not created for Pod ",
                                       ObjectKey(pod.meta), " (Pod is not owner)"));
      return out;
    }
    out.claims.push_back(claim);
  }
  return out;
}

PreFilterPlan PreFilter(const Pod& pod, const ObjectSet& objects, const FeatureGates& gates, ResourceIndex* index) {
  PreFilterPlan plan;
  PodClaims found = ResolveClaims(pod, objects, index);
  if (!found.status.IsSuccess()) {
    plan.status = std::move(found.status);
    return plan;
  }
  if (gates.Enabled("DRAExtendedResource")) {
    // preFilterExtendedResources: such a resource is allocated from ResourceSlices on nodes
    // without it in allocatable, which only the allocator decides.
    for (const auto& [resource, quantity] : PodRequests(pod, nullptr, gates.Enabled("PodLevelResources"))) {
      if (quantity.nanos() == 0 || !IsDraExtendedResourceName(resource)) continue;
      if (const DeviceClass* c = index->ClassForExtendedResource(objects, resource)) {
        plan.status = PluginStatus::Refuse(StrCat("kplace: allocating extended resource ", resource, " of pod ",
                                                  ObjectKey(pod.meta), " through DeviceClass ", c->meta.name,
                                                  " is not supported"));
        return plan;
      }
    }
  }
  if (found.claims.empty()) {
    plan.status = PluginStatus::Skip();
    return plan;
  }
  for (const ResourceClaim* claim : found.claims) {
    // CanBeReserved is always true upstream now ("no restrictions on sharing"), so an
    // allocated claim never makes the pod wait here.
    if (claim->allocated) {
      const NodeSelector* selector = claim->allocation_node_selector ? &*claim->allocation_node_selector : nullptr;
      if (selector) {
        std::vector<std::string> errors;
        for (size_t t = 0; t < selector->terms.size(); ++t) {
          if (node_affinity::IsEmptyTerm(selector->terms[t])) continue;
          for (std::string& e : node_affinity::NodeSelectorTermErrors(selector->terms[t], StrCat("nodeSelectorTerms[", t, "]"))) {
            errors.push_back(std::move(e));
          }
        }
        if (!errors.empty()) {
          plan.status = PluginStatus::Error(node_affinity::AggregateErrors(errors));
          return plan;
        }
      }
      plan.available_on.push_back(selector);
      continue;
    }
    plan.available_on.push_back(nullptr);
    if (!plan.to_allocate) plan.to_allocate = claim;
    // No allocation of kplace's is ever in flight. Every request's class must exist.
    const std::string claim_key = ObjectKey(claim->meta);
    for (const DeviceRequest& r : claim->requests) {
      PluginStatus s;
      if (r.exactly) {
        s = ValidateDeviceClass(objects, index, r.device_class_name, r.name);
      } else if (!r.first_available.empty()) {
        if (!gates.Enabled("DRAPrioritizedList")) {
          s = Unresolvable(StrCat("resource claim ", claim_key, ", request ", r.name,
                                  ": has subrequests, but the DRAPrioritizedList feature is disabled"));
        }
        for (const DeviceSubRequest& sub : r.first_available) {
          if (!s.IsSuccess()) break;
          s = ValidateDeviceClass(objects, index, sub.device_class_name, StrCat(r.name, "/", sub.name));
        }
      } else {
        s = Unresolvable(StrCat("resource claim ", claim_key, ", request ", r.name, ": unknown request type"));
      }
      if (!s.IsSuccess()) {
        plan.status = std::move(s);
        return plan;
      }
    }
  }
  plan.claims = std::move(found.claims);
  plan.status = PluginStatus::Success();
  return plan;
}

PluginStatus Filter(const PreFilterPlan& plan, const Node& node, std::vector<int32_t>* unavailable) {
  bool available = true;
  for (size_t k = 0; k < plan.available_on.size(); ++k) {
    if (plan.available_on[k] && !node_affinity::SelectorMatches(*plan.available_on[k], node)) {
      available = false;
      if (unavailable) unavailable->push_back(static_cast<int32_t>(k));
    }
  }
  // The allocator runs on the node before the unavailable claims are reported.
  if (plan.to_allocate) return AllocationRefusal(*plan.to_allocate);
  return available ? PluginStatus::Success() : Unresolvable(kNotAvailable);
}

PluginStatus AllocationRefusal(const ResourceClaim& claim) {
  return PluginStatus::Refuse(StrCat("kplace: allocating ResourceClaim ", ObjectKey(claim.meta), " is not supported"));
}

bool IsReservedForPod(const Pod& pod, const ResourceClaim& claim) {
  return std::any_of(claim.reserved_for.begin(), claim.reserved_for.end(),
                     [&](const ResourceClaimConsumerReference& r) { return r.uid == pod.meta.uid; });
}

std::vector<ResourceClaim> ReserveClaims(const Pod& pod, const PreFilterPlan& plan, PluginStatus* refusal) {
  std::vector<ResourceClaim> out;
  for (const ResourceClaim* claim : plan.claims) {
    if (IsReservedForPod(pod, *claim)) continue;
    if (claim->reserved_for.size() >= kResourceClaimReservedForMaxSize) {
      *refusal = PluginStatus::Refuse(StrCat("kplace: reserving ResourceClaim ", ObjectKey(claim->meta), " for pod ",
                                             ObjectKey(pod.meta), " is not supported: its status.reservedFor holds ",
                                             kResourceClaimReservedForMaxSize,
                                             " entries, so the API server would refuse the update and the binding fail"));
      return {};
    }
    ResourceClaim updated = *claim;
    updated.reserved_for.push_back(ResourceClaimConsumerReference{"", "pods", pod.meta.name, pod.meta.uid});
    out.push_back(std::move(updated));
  }
  return out;
}

PostFilterOutcome PostFilter(const Pod& pod, bool ran_prefilter, const PreFilterPlan& plan,
                             const std::vector<int32_t>& unavailable) {
  PostFilterOutcome out;
  if (!ran_prefilter) {
    out.status = PluginStatus::Error("not found");  // CycleState.Read's fwk.ErrNotFound
    return out;
  }
  if (plan.claims.empty()) {
    out.status = PluginStatus::Make(Code::kUnschedulable, "no new claims to deallocate");
    return out;
  }
  std::vector<int32_t> sorted = unavailable;
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  for (int32_t k : sorted) {
    const ResourceClaim& claim = *plan.claims[static_cast<size_t>(k)];
    const bool free = claim.reserved_for.empty() ||
                      (claim.reserved_for.size() == 1 && claim.reserved_for[0].uid == pod.meta.uid);
    if (!free) continue;
    ResourceClaim cleared = claim;
    cleared.reserved_for.clear();
    cleared.allocated = false;
    cleared.allocation_node_selector.reset();
    out.deallocated = std::move(cleared);
    out.status = PluginStatus::Make(Code::kUnschedulable, "deallocation of ResourceClaim completed");
    return out;
  }
  out.status = PluginStatus::Make(Code::kUnschedulable, "still not schedulable");
  return out;
}

PluginStatus HostSteps::PreEnqueue(const Pod& pod, const ObjectSet& objects) {
  return ResolveClaims(pod, objects, &index_).status;
}

PluginStatus HostSteps::PreBind(const Pod& pod, const ObjectSet& objects, ObjectSet* writes) {
  if (pod.resource_claims.empty()) return PluginStatus::Success();
  const PreFilterPlan plan = PreFilter(pod, objects, gates_, &index_);
  PluginStatus refusal;
  std::vector<ResourceClaim> reserved = ReserveClaims(pod, plan, &refusal);
  if (refusal.refused) return refusal;
  for (ResourceClaim& c : reserved) writes->resource_claims.push_back(std::move(c));
  return PluginStatus::Success();
}

PluginStatus HostSteps::PostFilter(const Pod& pod, const ObjectSet& objects, const PostFilterInput& in,
                                   ObjectSet* writes) {
  const PreFilterPlan plan = in.pre_filter_ran ? PreFilter(pod, objects, gates_, &index_) : PreFilterPlan{};
  std::vector<int32_t> unavailable;
  for (const Node* node : in.rejected) Filter(plan, *node, &unavailable);
  PostFilterOutcome out = dra::PostFilter(pod, in.pre_filter_ran, plan, unavailable);
  if (out.deallocated) writes->resource_claims.push_back(std::move(*out.deallocated));
  return out.status;
}

}  // namespace kplace::plugins::dra
