#include "kplace/cycle/queueing_hints.h"

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <utility>

#include "kplace/model/decode.h"
#include "kplace/model/requests.h"
#include "kplace/plugins/inter_pod_affinity_common.h"
#include "kplace/plugins/node_affinity_common.h"
#include "kplace/plugins/pod_topology_spread_common.h"
#include "kplace/plugins/volume_common.h"
#include "kplace/reference/plugin.h"
#include "kplace/reference/tolerations.h"

namespace kplace::cycle {
namespace {

using state::EventType;
using R = EventResource;

// ---- how the queue sees a watch event ---------------------------------------------------

bool SamePod(const Pod& a, const Pod& b) {
  if (!a.meta.uid.empty() && !b.meta.uid.empty()) return a.meta.uid == b.meta.uid;
  return ObjectKey(a.meta) == ObjectKey(b.meta);
}

int32_t PodPriority(const Pod& p) { return p.priority.value_or(0); }

bool IsOwnUpdate(const Pod& pod, const HintEvent& e) {
  return e.kind == "Pod" && e.type == EventType::kModified && e.old_pod && e.new_pod && SamePod(pod, *e.new_pod);
}

// NodeSchedulingPropertiesChange, for the fields kplace models (conditions are not).
std::vector<ActionType> NodeUpdateActions(const Node& before, const Node& after) {
  std::vector<ActionType> out;
  // Uncordoning reads as a taint change; cordoning gives nothing (it can only reject).
  if (before.unschedulable && !after.unschedulable) out.push_back(action::kUpdateNodeTaint);
  if (before.allocatable != after.allocatable) out.push_back(action::kUpdateNodeAllocatable);
  if (before.meta.labels != after.meta.labels) out.push_back(action::kUpdateNodeLabel);
  if (before.taints != after.taints) out.push_back(action::kUpdateNodeTaint);
  if (before.meta.annotations != after.meta.annotations) out.push_back(action::kUpdateNodeAnnotation);
  return out;
}

// extractPodScaleDown: some request of the old pod is gone or smaller (compared in millis).
bool ScaledDown(const Pod& before, const Pod& after, bool pod_level) {
  ResourceList was = PodRequests(before, nullptr, pod_level), now = PodRequests(after, nullptr, pod_level);
  for (const auto& [name, q] : was) {
    auto it = now.find(name);
    if (it == now.end() || q.MilliValue() > it->second.MilliValue()) return true;
  }
  return false;
}

// PodSchedulingPropertiesChange: one event per changed property, else a general Update
// (which reaches only registrations for every kind of update).
std::vector<ActionType> PodUpdateActions(const Pod& before, const Pod& after, const FeatureGates& gates) {
  std::vector<ActionType> out;
  if (before.meta.labels != after.meta.labels) out.push_back(action::kUpdatePodLabel);
  if (ScaledDown(before, after, gates.Enabled("PodLevelResources"))) out.push_back(action::kUpdatePodScaleDown);
  if (after.scheduling_gates.empty() && !before.scheduling_gates.empty()) {
    out.push_back(action::kUpdatePodSchedulingGatesEliminated);
  }
  // Tolerations can only be added, so a count change is the whole test.
  if (after.tolerations.size() != before.tolerations.size()) out.push_back(action::kUpdatePodToleration);
  auto same_claim = [](const PodResourceClaimStatus& a, const PodResourceClaimStatus& b) {
    return a.name == b.name && a.resource_claim_name == b.resource_claim_name;
  };
  if (!std::equal(before.resource_claim_statuses.begin(), before.resource_claim_statuses.end(),
                  after.resource_claim_statuses.begin(), after.resource_claim_statuses.end(), same_claim)) {
    out.push_back(action::kUpdatePodGeneratedResourceClaim);
  }
  if (out.empty()) out.push_back(action::kUpdate);
  return out;
}

std::vector<QueueEvent> PodEvents(const Pod& pod, const HintEvent& e, const FeatureGates& gates) {
  std::vector<QueueEvent> out;
  const Pod* before = e.old_pod;
  const Pod* after = e.new_pod;
  const Pod* any = after ? after : before;
  if (any == nullptr) return out;
  const bool self = SamePod(pod, *any);
  auto assigned = [](const Pod* p) { return p != nullptr && !p->node_name.empty(); };
  // The pod itself bound or gone: it leaves the queue.
  if (self && (assigned(before) || assigned(after) || e.type != EventType::kModified)) return out;
  auto push = [&](R r, ActionType a, const Pod* o, const Pod* n) { out.push_back({r, a, nullptr, nullptr, o, n}); };
  // A pending pod leaving a nominated node frees what pods of no higher priority counted
  // as taken there: the queue replays it as an assigned-pod delete of the old version.
  auto left_nomination = [&](const Pod& gone) {
    if (!gone.nominated_node_name.empty() && PodPriority(pod) <= PodPriority(gone))
      push(R::kAssignedPod, action::kDelete, &gone, nullptr);
  };
  switch (e.type) {
    case EventType::kAdded:
      if (assigned(after)) {
        push(R::kAssignedPod, action::kAdd, nullptr, after);
      } else if (after && !self && gates.Enabled("GenericWorkload")) {
        // The scheduler moves pods on a pending pod's add only for workload-aware
        // scheduling (its event handler, with the gate); GangScheduling registers it.
        push(R::kUnscheduledPod, action::kAdd, nullptr, after);
      }
      break;
    case EventType::kDeleted:
      if (assigned(before)) {
        push(R::kAssignedPod, action::kDelete, before, nullptr);
      } else if (before) {
        left_nomination(*before);
      }
      break;
    case EventType::kModified:
      if (!after) break;
      if (!before) {
        // No old version known: to the cache a pod that arrives bound is an add.
        if (assigned(after)) push(R::kAssignedPod, action::kAdd, nullptr, after);
      } else if (assigned(before)) {
        R r = assigned(after) ? R::kAssignedPod : R::kUnscheduledPod;
        for (ActionType a : PodUpdateActions(*before, *after, gates)) push(r, a, before, after);
      } else if (assigned(after)) {
        push(R::kAssignedPod, action::kAdd, nullptr, after);  // a binding adds the pod to the cache
      } else {
        // Another pending pod's update reaches the queue only through its nomination.
        if (self) {
          for (ActionType a : PodUpdateActions(*before, *after, gates)) push(R::kTargetPod, a, before, after);
        }
        if (before->nominated_node_name != after->nominated_node_name) left_nomination(*before);
      }
      break;
  }
  return out;
}

// The resources the scheduler's informers watch besides Node and Pod.
std::optional<R> ResourceOfKind(const std::string& kind) {
  static const std::map<std::string, R> kKinds = {
      {"PersistentVolume", R::kPersistentVolume},
      {"PersistentVolumeClaim", R::kPersistentVolumeClaim},
      {"StorageClass", R::kStorageClass},
      {"CSINode", R::kCSINode},
      {"CSIDriver", R::kCSIDriver},
      {"CSIStorageCapacity", R::kCSIStorageCapacity},
      {"VolumeAttachment", R::kVolumeAttachment},
      {"ResourceClaim", R::kResourceClaim},
      {"ResourceSlice", R::kResourceSlice},
      {"DeviceClass", R::kDeviceClass},
      {"PodGroup", R::kPodGroup},
  };
  auto it = kKinds.find(kind);
  if (it == kKinds.end()) return std::nullopt;
  return it->second;
}

// ---- registrations (EventsToRegister with queueing hints on) ------------------------------

enum class Hint : uint8_t {
  kQueue,  // no hint function (or one kplace cannot evaluate): always Queue
  kSkip,
  kFitNode,
  kFitPodDelete,
  kFitScaleDown,
  kAffinityNode,
  kPortsPodDelete,
  kUnschedulableNode,
  kUnschedulableToleration,
  kTaintNode,
  kIpaPod,
  kIpaNode,
  kSpreadPod,
  kSpreadNode,
  kRestrictionsPodDelete,
  kLimitsPodDelete,
  kGangPod,  // GangScheduling: a pod of the same PodGroup was added
};

struct Registration {
  R resource;
  ActionType actions;
  Hint hint;
};

std::vector<Registration> Registrations(const std::string& plugin, const FeatureGates& gates) {
  using namespace action;
  std::vector<Registration> out;
  if (plugin == "NodeResourcesFit") {
    out = {{R::kAssignedPod, kDelete, Hint::kFitPodDelete}, {R::kNode, kAdd | kUpdateNodeAllocatable, Hint::kFitNode}};
    // DRA-backed extended resources are not modelled: a DeviceClass change may matter.
    if (gates.Enabled("DRAExtendedResource")) out.push_back({R::kDeviceClass, kAdd | kUpdate, Hint::kQueue});
    if (gates.Enabled("InPlacePodVerticalScaling")) {
      out.push_back({R::kAssignedPod, kUpdatePodScaleDown, Hint::kFitScaleDown});
      out.push_back({R::kTargetPod, kUpdatePodScaleDown, Hint::kQueue});
    }
  } else if (plugin == "NodeAffinity") {
    out = {{R::kNode, kAdd | kUpdateNodeLabel, Hint::kAffinityNode}};
  } else if (plugin == "NodeName") {
    out = {{R::kNode, kAdd, Hint::kQueue}};
  } else if (plugin == "NodePorts") {
    out = {{R::kAssignedPod, kDelete, Hint::kPortsPodDelete}, {R::kNode, kAdd, Hint::kQueue}};
  } else if (plugin == "NodeUnschedulable") {
    out = {{R::kNode, kAdd | kUpdateNodeTaint, Hint::kUnschedulableNode},
           {R::kTargetPod, kUpdatePodToleration, Hint::kUnschedulableToleration}};
  } else if (plugin == "TaintToleration") {
    out = {{R::kNode, kAdd | kUpdateNodeTaint, Hint::kTaintNode}, {R::kTargetPod, kUpdatePodToleration, Hint::kQueue}};
  } else if (plugin == "InterPodAffinity") {
    // The pod's own label change: current upstream's hint is not reproduced, so Queue.
    out = {{R::kAssignedPod, kAdd | kUpdatePodLabel | kDelete, Hint::kIpaPod},
           {R::kTargetPod, kUpdatePodLabel, Hint::kQueue},
           {R::kNode, kAdd | kUpdateNodeLabel, Hint::kIpaNode}};
  } else if (plugin == "PodTopologySpread") {
    out = {{R::kAssignedPod, kAdd | kUpdatePodLabel | kDelete, Hint::kSpreadPod},
           {R::kTargetPod, kUpdatePodLabel | kUpdatePodToleration, Hint::kSpreadPod},
           {R::kNode, kAdd | kDelete | kUpdateNodeLabel | kUpdateNodeTaint, Hint::kSpreadNode}};
  } else if (plugin == "VolumeBinding") {
    // Storage objects are not part of HintEvent: their hints cannot decide here, so Queue.
    out = {{R::kStorageClass, kAdd | kUpdate, Hint::kQueue},
           {R::kPersistentVolumeClaim, kAdd | kUpdate, Hint::kQueue},
           {R::kPersistentVolume, kAdd | kUpdate, Hint::kQueue},
           {R::kNode, kAdd | kUpdateNodeLabel, Hint::kQueue},
           {R::kCSINode, kAdd | kUpdate, Hint::kQueue},
           {R::kCSIDriver, kUpdate, Hint::kQueue},
           {R::kCSIStorageCapacity, kAdd | kUpdate, Hint::kQueue}};
  } else if (plugin == "VolumeRestrictions") {
    out = {{R::kAssignedPod, kDelete, Hint::kRestrictionsPodDelete},
           {R::kNode, kAdd, Hint::kQueue},
           {R::kPersistentVolumeClaim, kAdd, Hint::kQueue}};
  } else if (plugin == "VolumeZone") {
    out = {{R::kStorageClass, kAdd, Hint::kQueue},
           {R::kNode, kAdd | kUpdateNodeLabel, Hint::kQueue},
           {R::kPersistentVolumeClaim, kAdd | kUpdate, Hint::kQueue},
           {R::kPersistentVolume, kAdd | kUpdate, Hint::kQueue}};
  } else if (plugin == "NodeVolumeLimits") {
    out = {{R::kCSINode, kAdd | kUpdate, Hint::kQueue},
           {R::kAssignedPod, kDelete, Hint::kLimitsPodDelete},
           {R::kPersistentVolumeClaim, kAdd, Hint::kQueue},
           {R::kVolumeAttachment, kDelete, Hint::kQueue}};
  } else if (plugin == "DynamicResources") {
    // Its claim and pod hints read claims HintEvent does not carry (which claim UIDs the pod
    // uses), so Queue; classes, slices and nodes have no hint.
    out = {{R::kNode, kAdd | kUpdateNodeLabel | kUpdateNodeAllocatable, Hint::kQueue},
           {R::kResourceClaim, kAdd | kUpdate, Hint::kQueue},
           {R::kTargetPod, kUpdatePodGeneratedResourceClaim, Hint::kQueue},
           {R::kDeviceClass, kAdd | kUpdate, Hint::kQueue},
           {R::kResourceSlice, kAdd | kUpdate, Hint::kQueue}};
  } else if (plugin == "GangScheduling") {
    // A member added may complete the gang; a PodGroup added (or its minCount lowered: the
    // event does not carry the object here, so Queue) may let its pods in.
    out = {{R::kAssignedPod, kAdd, Hint::kGangPod},
           {R::kUnscheduledPod, kAdd, Hint::kGangPod},
           {R::kPodGroup, kAdd | kUpdate, Hint::kQueue}};
  } else if (plugin == "SchedulingGates") {
    out = {{R::kTargetPod, kUpdatePodSchedulingGatesEliminated, Hint::kQueue}};
  } else if (plugin == "DefaultPreemption") {
    // Its PreEnqueue waits for an async preemption; a deletion never releases it.
    if (gates.Enabled("SchedulerAsyncPreemption")) out = {{R::kAssignedPod, kDelete, Hint::kSkip}};
  } else if (plugin == "NodeResourcesBalancedAllocation" || plugin == "ImageLocality" || plugin == "PrioritySort" ||
             plugin == "DefaultBinder") {
    // Not PreEnqueue/PreFilter/Filter/Reserve/Permit: the framework ignores their events.
  } else {
    // No EnqueueExtensions known (out-of-tree plugins):
    // the framework's default registers every resource for every action.
    for (R r : {R::kPod, R::kNode, R::kPersistentVolume, R::kPersistentVolumeClaim, R::kCSINode, R::kCSIDriver,
                R::kCSIStorageCapacity, R::kStorageClass, R::kResourceClaim, R::kDeviceClass}) {
      out.push_back({r, kAll, Hint::kQueue});
    }
  }
  // buildQueueingHintMap's preCheck workaround, kept while preCheck exists: a plugin that
  // registers Node/Add but no taint update also gets Node/UpdateNodeTaint, always Queue.
  auto node_has = [&](ActionType a) {
    return std::any_of(out.begin(), out.end(),
                       [&](const Registration& r) { return r.resource == R::kNode && (r.actions & a); });
  };
  if (node_has(kAdd) && !node_has(kUpdateNodeTaint)) out.push_back({R::kNode, kUpdateNodeTaint, Hint::kQueue});
  return out;
}

// MatchClusterEvents.
bool Matches(const Registration& r, const QueueEvent& e) {
  const bool resource = r.resource == R::kWildCard || r.resource == e.resource ||
                        (r.resource == R::kPod && (e.resource == R::kAssignedPod || e.resource == R::kUnscheduledPod ||
                                                   e.resource == R::kTargetPod));
  return resource && (r.actions & e.actions) != 0 && e.actions <= r.actions;
}

// ---- the hint functions -------------------------------------------------------------------

// A required pod (anti-)affinity term as the hints match it: the incoming pod's namespace
// selector is not resolved, so it is matched against an empty label set.
struct AffinityTerm {
  std::vector<std::string> namespaces;
  spread::PodSelector namespace_selector, selector;
  std::string topology_key;
};

bool MatchesAllTerms(const std::vector<AffinityTerm>& terms, const Pod& p) {
  if (terms.empty()) return false;
  for (const AffinityTerm& t : terms) {
    const bool in_namespace =
        std::find(t.namespaces.begin(), t.namespaces.end(), p.meta.namespace_) != t.namespaces.end() ||
        t.namespace_selector.Matches(Labels{});
    if (!in_namespace || !t.selector.Matches(p.meta.labels)) return false;
  }
  return true;
}

struct HardConstraint {
  std::string topology_key;
  spread::PodSelector selector;
  bool honor_taints = false;
};

bool HasAllTopologyKeys(const Node& node, const std::vector<HardConstraint>& constraints) {
  return std::all_of(constraints.begin(), constraints.end(),
                     [&](const HardConstraint& c) { return node.meta.labels.count(c.topology_key) > 0; });
}

bool AnySelectorMatches(const std::vector<HardConstraint>& constraints, const Labels& labels) {
  return std::any_of(constraints.begin(), constraints.end(),
                     [&](const HardConstraint& c) { return c.selector.Matches(labels); });
}

bool SameTolerations(const std::vector<Toleration>& a, const std::vector<Toleration>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](const Toleration& x, const Toleration& y) {
    return x.key == y.key && x.op == y.op && x.value == y.value && x.effect == y.effect &&
           x.toleration_seconds == y.toleration_seconds;
  });
}

std::string LabelOrEmpty(const Node& node, const std::string& key) {
  auto it = node.meta.labels.find(key);
  return it == node.meta.labels.end() ? std::string() : it->second;
}

bool UsesClaim(const Pod& pod, const std::string& claim) {
  return std::any_of(pod.volumes.begin(), pod.volumes.end(),
                     [&](const Volume& v) { return v.source == "persistentVolumeClaim" && v.claim_name == claim; });
}

class HintRunner {
 public:
  HintRunner(const Profile& profile, const FeatureGates& gates)
      : profile_(profile),
        gates_(gates),
        pod_level_(gates.Enabled("PodLevelResources")),
        comparison_operators_(gates.Enabled("TaintTolerationComparisonOperators")) {
    // The scheduler-enforced selector alone, as a pod carrying just that affinity.
    const auto& added = profile.args.node_affinity.added_affinity;
    if (added && added->required) {
      enforced_.affinity.emplace().node_affinity.emplace().required = added->required;
    }
  }

  /** Some registration of `plugin` matches `e` and its hint says Queue. */
  bool Queue(const std::string& plugin, const Pod& pod, const QueueEvent& e) {
    for (const Registration& r : Registrations(plugin, gates_)) {
      if (Matches(r, e) && Run(r.hint, pod, e)) return true;
    }
    return false;
  }

  bool Registers(const std::string& plugin, const QueueEvent& e) const {
    auto regs = Registrations(plugin, gates_);
    return std::any_of(regs.begin(), regs.end(), [&](const Registration& r) { return Matches(r, e); });
  }

 private:
  bool Run(Hint h, const Pod& pod, const QueueEvent& e) {
    switch (h) {
      case Hint::kQueue: return true;
      case Hint::kSkip: return false;
      case Hint::kFitNode: return FitNode(pod, e);
      case Hint::kFitPodDelete: return e.old_pod == nullptr || HeldNode(*e.old_pod);
      case Hint::kFitScaleDown: return FitScaleDown(pod, e);
      case Hint::kAffinityNode: return AffinityNode(pod, e);
      case Hint::kPortsPodDelete: return PortsPodDelete(pod, e);
      case Hint::kUnschedulableNode:
        return e.new_node == nullptr ||
               (!e.new_node->unschedulable && (e.old_node == nullptr || e.old_node->unschedulable));
      case Hint::kUnschedulableToleration: {
        const Taint cordon{"node.kubernetes.io/unschedulable", "", "NoSchedule"};
        return reference::TolerationsTolerateTaint(pod.tolerations, cordon, comparison_operators_);
      }
      case Hint::kTaintNode: return TaintNode(pod, e);
      case Hint::kIpaPod: return IpaPod(pod, e);
      case Hint::kIpaNode: return IpaNode(pod, e);
      case Hint::kSpreadPod: return SpreadPod(pod, e);
      case Hint::kSpreadNode: return SpreadNode(pod, e);
      case Hint::kRestrictionsPodDelete: return RestrictionsPodDelete(pod, e);
      case Hint::kLimitsPodDelete: return LimitsPodDelete(e);
      case Hint::kGangPod:
        return e.new_pod && !pod.scheduling_group.empty() && e.new_pod->scheduling_group == pod.scheduling_group &&
               e.new_pod->meta.namespace_ == pod.meta.namespace_;
    }
    return true;
  }

  // A deleted pod only released something when it was bound or nominated somewhere.
  static bool HeldNode(const Pod& p) { return !p.node_name.empty() || !p.nominated_node_name.empty(); }

  // Reference plugins built with default args, for the Filter checks hints repeat.
  reference::Plugin* Plugin(const std::string& name) {
    auto [it, fresh] = plugins_.try_emplace(name);
    if (fresh) {
      auto made = reference::MakePlugin(name, PluginArgs{}, gates_);
      if (made.ok()) it->second = std::move(*made);
    }
    return it->second.get();
  }

  // nullopt when the reference plugin is missing (the hint then cannot decide).
  std::optional<bool> FilterPasses(const std::string& plugin, const Pod& pod, const Node& node,
                                   std::vector<const Pod*> pods) {
    reference::Plugin* p = Plugin(plugin);
    if (p == nullptr) return std::nullopt;
    reference::CycleState state;
    reference::NodeInfo info{&node, std::move(pods)};
    return p->Filter(state, pod, info, cluster_).IsSuccess();
  }

  // NodeResourcesFit: the node, empty, holds the pod (upstream's isFit ignores the plugin's
  // ignored resources) and, for an update, allocatable grew where the pod asks for something.
  bool FitNode(const Pod& pod, const QueueEvent& e) {
    if (e.new_node == nullptr) return true;
    if (FilterPasses("NodeResourcesFit", pod, *e.new_node, {}) == false) return false;
    if (e.old_node == nullptr) return true;
    const Resource want = Resource::From(PodRequests(pod, nullptr, pod_level_), false);
    const Resource was = Resource::From(e.old_node->allocatable, true);
    const Resource now = Resource::From(e.new_node->allocatable, true);
    if (now.allowed_pods > was.allowed_pods) return true;
    auto grew = [&](int64_t asked, std::string_view name) { return asked > 0 && now.Get(name) > was.Get(name); };
    if (grew(want.milli_cpu, "cpu") || grew(want.memory, "memory") ||
        grew(want.ephemeral_storage, "ephemeral-storage")) {
      return true;
    }
    return std::any_of(want.scalars.begin(), want.scalars.end(),
                       [&](const auto& s) { return grew(s.second, s.first); });
  }

  // An assigned pod scaled down a resource the pending pod requests.
  bool FitScaleDown(const Pod& pod, const QueueEvent& e) {
    if (e.old_pod == nullptr || e.new_pod == nullptr) return true;
    const Resource was = Resource::From(PodRequests(*e.old_pod, nullptr, pod_level_), false);
    const Resource now = Resource::From(PodRequests(*e.new_pod, nullptr, pod_level_), false);
    for (const auto& [name, q] : PodRequests(pod, nullptr, pod_level_)) {
      if (q.IsZero()) continue;
      const bool counted =
          name == "cpu" || name == "memory" || name == "ephemeral-storage" || IsScalarResourceName(name);
      if (counted && was.Get(name) > now.Get(name)) return true;
    }
    return false;
  }

  // GetRequiredNodeAffinity(pod).Match: a term that does not parse is an error (Queue) only
  // when the nodeSelector matched and no other term did.
  struct AffinityMatch {
    bool matched = false, error = false;
  };
  AffinityMatch PodAffinityMatch(const Pod& pod, const Node& node) const {
    AffinityMatch m;
    m.matched = spread::RequiredPlacement(pod).Matches(node);
    if (m.matched || !pod.affinity || !pod.affinity->node_affinity || !pod.affinity->node_affinity->required) return m;
    Pod selector_only;
    selector_only.node_selector = pod.node_selector;
    if (!spread::RequiredPlacement(selector_only).Matches(node)) return m;
    for (const NodeSelectorTerm& t : pod.affinity->node_affinity->required->terms) {
      if (!plugins::node_affinity::IsEmptyTerm(t) && !plugins::node_affinity::NodeSelectorTermErrors(t, "").empty()) {
        m.error = true;
      }
    }
    return m;
  }

  // NodeAffinity: only an add or an unmatched → matched change of the pod's own affinity
  // (the enforced selector must match the new node, whatever the old one did).
  bool AffinityNode(const Pod& pod, const QueueEvent& e) {
    if (e.new_node == nullptr) return true;
    if (!spread::RequiredPlacement(enforced_).Matches(*e.new_node)) return false;
    AffinityMatch now = PodAffinityMatch(pod, *e.new_node);
    if (now.error) return true;
    if (!now.matched) return false;
    if (e.old_node == nullptr) return true;
    AffinityMatch was = PodAffinityMatch(pod, *e.old_node);
    return was.error || !was.matched;
  }

  // NodePorts: the deleted pod held a host port the pending pod wants.
  bool PortsPodDelete(const Pod& pod, const QueueEvent& e) {
    if (e.old_pod == nullptr) return true;
    if (!HeldNode(*e.old_pod)) return false;
    reference::Plugin* ports = Plugin("NodePorts");
    if (ports == nullptr) return true;
    reference::CycleState state;
    reference::NodeNameSet names;
    PluginStatus pre = ports->PreFilter(state, pod, cluster_, &names);
    if (pre.IsSkip()) return false;  // the pending pod asks for no host port
    if (!pre.IsSuccess()) return true;
    Node holder;
    reference::NodeInfo info{&holder, {e.old_pod}};
    return !ports->Filter(state, pod, info, cluster_).IsSuccess();
  }

  // TaintToleration: untolerated before (or new), tolerated now.
  bool TaintNode(const Pod& pod, const QueueEvent& e) const {
    if (e.new_node == nullptr) return true;
    const bool was_untolerated =
        e.old_node == nullptr || !spread::ToleratesHardTaints(pod.tolerations, *e.old_node, comparison_operators_);
    return was_untolerated && spread::ToleratesHardTaints(pod.tolerations, *e.new_node, comparison_operators_);
  }

  // The pod's required affinity and anti-affinity terms; false when upstream's parse fails.
  bool RequiredTerms(const Pod& pod, std::vector<AffinityTerm>* affinity, std::vector<AffinityTerm>* anti) const {
    plugins::IpaPodTerms parsed = plugins::ParseIpaPodTerms(pod, gates_.Enabled("MatchLabelKeysInPodAffinity"));
    if (!parsed.error.empty()) return false;
    auto convert = [&](const std::vector<PodAffinityTerm>& in, std::vector<AffinityTerm>* out) {
      for (const PodAffinityTerm& t : in) {
        AffinityTerm a;
        a.topology_key = t.topology_key;
        a.namespaces = t.namespaces.empty() && !t.namespace_selector ? std::vector<std::string>{pod.meta.namespace_}
                                                                     : t.namespaces;
        std::string error;
        if (!spread::ParsePodSelector(t.label_selector, &a.selector, &error) ||
            !spread::ParsePodSelector(t.namespace_selector, &a.namespace_selector, &error)) {
          return false;
        }
        out->push_back(std::move(a));
      }
      return true;
    };
    return convert(parsed.required_affinity, affinity) && convert(parsed.required_anti_affinity, anti);
  }

  // InterPodAffinity, assigned pods: an add that satisfies all affinity terms, an update
  // that starts satisfying them or stops matching all anti-affinity terms, a delete of a
  // pod matching all anti-affinity terms.
  bool IpaPod(const Pod& pod, const QueueEvent& e) const {
    if ((e.new_pod && e.new_pod->node_name.empty()) || (e.old_pod && e.old_pod->node_name.empty())) return false;
    std::vector<AffinityTerm> affinity, anti;
    if (!RequiredTerms(pod, &affinity, &anti)) return true;
    if (e.old_pod && e.new_pod) {
      return (!MatchesAllTerms(affinity, *e.old_pod) && MatchesAllTerms(affinity, *e.new_pod)) ||
             (MatchesAllTerms(anti, *e.old_pod) && !MatchesAllTerms(anti, *e.new_pod));
    }
    if (e.new_pod) return MatchesAllTerms(affinity, *e.new_pod);
    return e.old_pod == nullptr || MatchesAllTerms(anti, *e.old_pod);
  }

  // InterPodAffinity, nodes: the node carries the topology key of some required term.
  bool IpaNode(const Pod& pod, const QueueEvent& e) const {
    if (e.new_node == nullptr) return true;
    std::vector<AffinityTerm> affinity, anti;
    if (!RequiredTerms(pod, &affinity, &anti)) return true;
    affinity.insert(affinity.end(), anti.begin(), anti.end());
    return std::any_of(affinity.begin(), affinity.end(),
                       [&](const AffinityTerm& t) { return e.new_node->meta.labels.count(t.topology_key) > 0; });
  }

  // PodTopologySpread's hard constraints as getConstraints builds them; false when its hint
  // would fail, or cannot be computed here: List-defaulted constraints take their selector
  // from the pod's Services and controllers, which hints do not see.
  bool HardConstraints(const Pod& pod, std::vector<HardConstraint>* out) const {
    const PodTopologySpreadArgs& args = profile_.args.pod_topology_spread;
    const bool own = !pod.topology_spread_constraints.empty();
    // System defaulting spreads with ScheduleAnyway only: nothing hard.
    if (!own && args.defaulting_type != "List") return true;
    for (const TopologySpreadConstraint& t : own ? pod.topology_spread_constraints : args.default_constraints) {
      if (t.when_unsatisfiable != "DoNotSchedule") continue;
      if (!own) return false;
      HardConstraint c;
      c.topology_key = t.topology_key;
      std::string error;
      if (!spread::ParsePodSelector(t.label_selector, &c.selector, &error)) return false;
      Labels keyed;
      for (const std::string& key : t.match_label_keys) {
        if (auto it = pod.meta.labels.find(key); it != pod.meta.labels.end()) keyed.insert(*it);
      }
      if (gates_.Enabled("MatchLabelKeysInPodTopologySpread") && !keyed.empty()) {
        c.selector = spread::MergeSetIntoSelector(keyed, c.selector);
      }
      c.honor_taints = gates_.Enabled("NodeInclusionPolicyInPodTopologySpread") && t.node_taints_policy == "Honor";
      out->push_back(std::move(c));
    }
    return true;
  }

  // PodTopologySpread, pods: assigned pods of the namespace (or the pod itself) whose
  // labels enter or leave a constraint's selector; the pod's new tolerations when a
  // constraint honours taints.
  bool SpreadPod(const Pod& pod, const QueueEvent& e) const {
    auto involved = [&](const Pod& p) {
      return SamePod(p, pod) || (!p.node_name.empty() && p.meta.namespace_ == pod.meta.namespace_);
    };
    if ((e.new_pod && !involved(*e.new_pod)) || (e.old_pod && !involved(*e.old_pod))) return false;
    std::vector<HardConstraint> constraints;
    if (!HardConstraints(pod, &constraints)) return true;
    if (e.old_pod && e.new_pod) {
      const bool honor =
          std::any_of(constraints.begin(), constraints.end(), [](const HardConstraint& c) { return c.honor_taints; });
      if (SamePod(*e.new_pod, pod) && honor && !SameTolerations(e.old_pod->tolerations, e.new_pod->tolerations))
        return true;
      if (e.old_pod->meta.labels == e.new_pod->meta.labels) return false;
      return std::any_of(constraints.begin(), constraints.end(), [&](const HardConstraint& c) {
        return c.selector.Matches(e.old_pod->meta.labels) != c.selector.Matches(e.new_pod->meta.labels);
      });
    }
    const Pod* p = e.new_pod ? e.new_pod : e.old_pod;
    return p == nullptr || AnySelectorMatches(constraints, p->meta.labels);
  }

  // PodTopologySpread, nodes: a node entering or leaving the constraints' domains, or one in
  // them whose topology values or taints changed.
  bool SpreadNode(const Pod& pod, const QueueEvent& e) const {
    std::vector<HardConstraint> constraints;
    if (!HardConstraints(pod, &constraints)) return true;
    const bool was_in = e.old_node && HasAllTopologyKeys(*e.old_node, constraints);
    const bool is_in = e.new_node && HasAllTopologyKeys(*e.new_node, constraints);
    if (e.old_node && e.new_node) {
      if (was_in != is_in) return true;
      if (!is_in) return false;
      const bool values_changed = std::any_of(constraints.begin(), constraints.end(), [&](const HardConstraint& c) {
        return LabelOrEmpty(*e.old_node, c.topology_key) != LabelOrEmpty(*e.new_node, c.topology_key);
      });
      return values_changed || e.old_node->taints != e.new_node->taints;
    }
    return e.new_node ? is_in : was_in;
  }

  // VolumeRestrictions: a deleted pod of the namespace held a disk the pending pod's
  // volumes conflict with, or used one of its claims (perhaps ReadWriteOncePod).
  bool RestrictionsPodDelete(const Pod& pod, const QueueEvent& e) {
    if (e.old_pod == nullptr) return true;
    const Pod& gone = *e.old_pod;
    if (gone.meta.namespace_ != pod.meta.namespace_) return false;
    Node holder;
    if (FilterPasses("VolumeRestrictions", pod, holder, {&gone}) != true) return true;
    return std::any_of(pod.volumes.begin(), pod.volumes.end(), [&](const Volume& v) {
      return v.source == "persistentVolumeClaim" && UsesClaim(gone, v.claim_name);
    });
  }

  // NodeVolumeLimits: a deleted pod that held a node and an attachable volume.
  static bool LimitsPodDelete(const QueueEvent& e) {
    if (e.old_pod == nullptr) return true;
    const Pod& gone = *e.old_pod;
    if (!HeldNode(gone)) return false;
    return std::any_of(gone.volumes.begin(), gone.volumes.end(), [](const Volume& v) {
      return v.source == "persistentVolumeClaim" || v.source == "ephemeral" || plugins::volume::IsInlineMigratable(v);
    });
  }

  const Profile& profile_;
  const FeatureGates& gates_;
  const bool pod_level_;
  const bool comparison_operators_;
  Pod enforced_;
  reference::ClusterState cluster_;
  std::map<std::string, std::unique_ptr<reference::Plugin>> plugins_;
};

// The plugins whose registrations make an event interesting to the queue: the enabled
// PreEnqueue, PreFilter and Filter plugins.
std::vector<std::string> EnqueuePlugins(const Profile& profile) {
  std::vector<std::string> out = profile.pre_filter;
  out.insert(out.end(), profile.filter.begin(), profile.filter.end());
  out.insert(out.end(), profile.pre_enqueue.begin(), profile.pre_enqueue.end());
  out.push_back("SchedulingGates");  // PreEnqueue, in every default profile
  for (const std::string& p : profile.post_filter) {
    if (p == "DefaultPreemption") out.push_back(p);  // also a PreEnqueue plugin
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace

std::vector<QueueEvent> DeriveQueueEvents(const Pod& pod, const HintEvent& e, const FeatureGates& gates) {
  std::vector<QueueEvent> out;
  if (e.kind == "Pod") return PodEvents(pod, e, gates);
  if (e.kind == "Node") {
    if (e.type == EventType::kAdded && e.new_node) {
      out.push_back({R::kNode, action::kAdd, nullptr, e.new_node});
    } else if (e.type == EventType::kDeleted && e.old_node) {
      out.push_back({R::kNode, action::kDelete, e.old_node, nullptr});
    } else if (e.type == EventType::kModified && e.new_node) {
      // An update of a node the cache did not have adds it.
      if (!e.old_node) {
        out.push_back({R::kNode, action::kAdd, nullptr, e.new_node});
      } else {
        for (ActionType a : NodeUpdateActions(*e.old_node, *e.new_node))
          out.push_back({R::kNode, a, e.old_node, e.new_node});
      }
    }
    return out;
  }
  if (std::optional<R> r = ResourceOfKind(e.kind)) {
    ActionType a = e.type == EventType::kAdded     ? action::kAdd
                   : e.type == EventType::kDeleted ? action::kDelete
                                                   : action::kUpdate;
    out.push_back({*r, a});
  }
  return out;
}

bool IsPodWorthRequeuing(const Pod& pod, const std::vector<std::string>& plugins, const HintEvent& event,
                         const Profile& profile, const FeatureGates& gates) {
  const std::vector<QueueEvent> events = DeriveQueueEvents(pod, event, gates);
  if (events.empty()) return false;
  // The pod's own update replaces the queued copy before the hints run.
  const Pod& subject = IsOwnUpdate(pod, event) ? *event.new_pod : pod;
  if (!subject.scheduling_gates.empty()) return false;
  HintRunner hints(profile, gates);
  if (plugins.empty()) {
    // Without rejectors (an error last time) the pod moves on any event the queue acts on;
    // its own update always reaches it.
    std::vector<std::string> enabled = EnqueuePlugins(profile);
    if (gates.Enabled("GenericWorkload")) enabled.push_back("GangScheduling");  // PreEnqueue, with the gate
    return std::any_of(events.begin(), events.end(), [&](const QueueEvent& e) {
      return e.resource == R::kTargetPod ||
             std::any_of(enabled.begin(), enabled.end(), [&](const std::string& p) { return hints.Registers(p, e); });
    });
  }
  for (const QueueEvent& e : events) {
    for (const std::string& p : plugins) {
      if (hints.Queue(p, subject, e)) return true;
    }
  }
  return false;
}

}  // namespace kplace::cycle
