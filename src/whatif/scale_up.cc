// whatif::ScaleUp: Cluster Autoscaler's binpacking estimator (first-fit decreasing over
// pod equivalence groups) with the cycle's own Filter on the live state (docs/whatif.md).
#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "fork.h"
#include "kplace/common/status.h"
#include "kplace/common/strings.h"
#include "kplace/cycle/batch.h"
#include "kplace/cycle/node_order.h"
#include "kplace/model/decode.h"
#include "kplace/plugins/scheduling_gates.h"
#include "kplace/state/event.h"
#include "kplace/whatif/whatif.h"

namespace kplace::whatif {
namespace {

constexpr char kHostnameLabel[] = "kubernetes.io/hostname";

// Pods CA estimates together: the same controller and the same pod apart from its name
// (its equivalence groups); a pod without a controller is a group alone.
struct Group {
  std::vector<size_t> members;  // indices into the pending pods, in input order
  double size = 0;              // CA's DecreasingPodOrderer score
};

// CA's score: CPU plus memory requests of the regular containers, each relative to the
// template's allocatable (a resource the template lacks counts 0).
double Size(const Pod& pod, const Node& tmpl) {
  int64_t cpu = 0, memory = 0;
  for (const Container& c : pod.containers) {
    if (auto it = c.requests.find("cpu"); it != c.requests.end()) cpu += it->second.MilliValue();
    if (auto it = c.requests.find("memory"); it != c.requests.end()) memory += it->second.Value();
  }
  double size = 0;
  if (auto it = tmpl.allocatable.find("cpu"); it != tmpl.allocatable.end() && it->second.MilliValue() > 0) {
    size += static_cast<double>(cpu) / static_cast<double>(it->second.MilliValue());
  }
  if (auto it = tmpl.allocatable.find("memory"); it != tmpl.allocatable.end() && it->second.Value() > 0) {
    size += static_cast<double>(memory) / static_cast<double>(it->second.Value());
  }
  return size;
}

const OwnerReference* Controller(const Pod& pod) {
  for (const OwnerReference& o : pod.meta.owner_references) {
    if (o.controller) return &o;
  }
  return nullptr;
}

// The groups in the order they are tried: largest first, ties in order of first appearance.
std::vector<Group> Groups(const std::vector<Pod>& pods, const std::vector<size_t>& tried, const Node* first) {
  std::vector<Group> groups;
  std::map<std::string, size_t> by_key;  // controller uid + signature -> group
  for (size_t k : tried) {
    const OwnerReference* owner = Controller(pods[k]);
    if (owner) {
      const std::string key = StrCat(owner->uid, "/", cycle::SchedulingSignature(pods[k]));
      auto [it, fresh] = by_key.emplace(key, groups.size());
      if (!fresh) {
        groups[it->second].members.push_back(k);
        continue;
      }
    }
    groups.push_back(Group{{k}, first ? Size(pods[k], *first) : 0});
  }
  std::stable_sort(groups.begin(), groups.end(), [](const Group& a, const Group& b) { return a.size > b.size; });
  return groups;
}

absl::Status Validate(cycle::Scheduler* scheduler, const std::vector<Pod>& pods, const std::vector<Node>& templates,
                      const ScaleUpOptions& options) {
  if (options.max_nodes < 0) return absl::InvalidArgumentError(StrCat("max_nodes: ", options.max_nodes, ": must not be negative"));
  std::set<std::string> keys;
  for (size_t k = 0; k < pods.size(); ++k) {
    const std::string key = ObjectKey(pods[k].meta);
    if (!pods[k].node_name.empty()) return absl::InvalidArgumentError(StrCat("pods[", k, "]: Pod ", key, ": spec.nodeName is set"));
    if (!keys.insert(key).second) return absl::InvalidArgumentError(StrCat("pods[", k, "]: Pod ", key, " is given twice"));
    if (const Pod* bound = scheduler->state().FindBoundPod(key)) {
      return absl::InvalidArgumentError(StrCat("pods[", k, "]: Pod ", key, " is already bound to node ", bound->node_name));
    }
  }
  std::set<std::string> names;
  for (size_t t = 0; t < templates.size(); ++t) {
    const std::string& name = templates[t].meta.name;
    if (name.empty()) return absl::InvalidArgumentError(StrCat("templates[", t, "]: metadata.name: a template needs a name"));
    if (!names.insert(name).second) return absl::InvalidArgumentError(StrCat("templates[", t, "]: Node ", name, " is named twice"));
  }
  return absl::OkStatus();
}

// The plan as it grows, inside the what-if's transaction.
class Planner {
 public:
  Planner(cycle::Scheduler* scheduler, const std::vector<Node>& templates, const ScaleUpOptions& options)
      : scheduler_(scheduler), st_(scheduler->state()), templates_(templates), options_(options),
        next_suffix_(templates.size(), 0) {
    for (const Node& t : templates) out_.new_nodes[t.meta.name] = 0;
  }

  // Places one group's pods, as CA's estimator does for one equivalence group.
  absl::Status PlaceGroup(const std::vector<Pod>& pods, const Group& group) {
    bool on_existing = true;
    std::optional<cycle::Placement> rest;  // why the group's remaining pods stay pending
    for (size_t k : group.members) {
      const Pod& pod = pods[k];
      if (rest) {
        cycle::Placement p = *rest;
        p.pod = ObjectKey(pod.meta);
        out_.pods.push_back(std::move(p));
        continue;
      }
      if (on_existing) {
        KPLACE_ASSIGN_OR_RETURN(std::optional<std::string> fit, scheduler_->FirstFit(pod, {}));
        if (fit) {
          KPLACE_RETURN_IF_ERROR(Place(pod, *fit));
          continue;
        }
        on_existing = false;  // its like fit no node there either: the rest tries new nodes
      }
      if (!last_.empty()) {
        KPLACE_ASSIGN_OR_RETURN(std::optional<std::string> fit, scheduler_->FirstFit(pod, {last_}));
        if (fit) {
          KPLACE_RETURN_IF_ERROR(Place(pod, last_));
          continue;
        }
      }
      KPLACE_ASSIGN_OR_RETURN(std::optional<cycle::Placement> pending, OnNewNode(pod));
      if (!pending) continue;
      out_.pods.push_back(*pending);
      rest = std::move(pending);
    }
    return absl::OkStatus();
  }

  ScaleUpResult Take() { return std::move(out_); }

 private:
  absl::Status Place(const Pod& pod, const std::string& node) {
    KPLACE_RETURN_IF_ERROR(scheduler_->Assume(pod, node));
    cycle::Placement p;
    p.pod = ObjectKey(pod.meta);
    p.node = node;
    p.feasible = 1;  // the first fit ends the search
    out_.pods.push_back(std::move(p));
    return absl::OkStatus();
  }

  // A new node of the first template whose empty node `pod` fits, with the pod on it;
  // otherwise why the pod stays pending (nothing added).
  absl::StatusOr<std::optional<cycle::Placement>> OnNewNode(const Pod& pod) {
    cycle::Placement pending;
    pending.pod = ObjectKey(pod.meta);
    pending.code = Code::kUnschedulable;
    if (templates_.empty()) {
      pending.message = "no node template to add a node of";
      return std::optional<cycle::Placement>(std::move(pending));
    }
    if (static_cast<int64_t>(out_.nodes.size()) >= options_.max_nodes) {
      pending.message = StrCat("no new node: the scale-up's limit of ", options_.max_nodes, " new nodes is reached");
      return std::optional<cycle::Placement>(std::move(pending));
    }
    std::map<std::string, int64_t> reasons;
    std::set<std::string> plugins;
    for (size_t t = 0; t < templates_.size(); ++t) {
      KPLACE_ASSIGN_OR_RETURN(const Node node, Add(t));
      KPLACE_ASSIGN_OR_RETURN(std::vector<cycle::NodeFit> fits, scheduler_->Filter(pod, {node.meta.name}, true));
      const cycle::NodeFit& fit = fits[0];
      if (fit.status.IsSuccess()) {
        ++next_suffix_[t];
        ++out_.new_nodes[templates_[t].meta.name];
        out_.nodes.push_back(node);
        last_ = node.meta.name;
        KPLACE_RETURN_IF_ERROR(Place(pod, last_));
        return std::optional<cycle::Placement>();
      }
      // Not kept: an empty node would change what later pods see (a spread domain), and the
      // plan must equal the cluster with the nodes it reports.
      KPLACE_RETURN_IF_ERROR(st_.Apply(state::NodeEvent(state::EventType::kDeleted, *st_.FindNode(node.meta.name))));
      if (fit.status.code == Code::kError) pending.code = Code::kError;
      ++reasons[fit.status.Message()];
      if (!fit.plugin.empty()) plugins.insert(fit.plugin);
    }
    pending.message = cycle::FitErrorMessage(static_cast<int32_t>(templates_.size()), "", reasons);
    pending.unschedulable_plugins.assign(plugins.begin(), plugins.end());
    return std::optional<cycle::Placement>(std::move(pending));
  }

  // Template t's next node, added to the cluster: `<template>-<i>`, the first i whose name
  // the cluster does not hold, its hostname label that name (spread and anti-affinity over
  // hostnames see a node of its own).
  absl::StatusOr<Node> Add(size_t t) {
    Node node = templates_[t];
    while (st_.Row(StrCat(templates_[t].meta.name, "-", next_suffix_[t])) != engine::kNoId) ++next_suffix_[t];
    node.meta.name = StrCat(templates_[t].meta.name, "-", next_suffix_[t]);
    node.meta.uid.clear();
    node.meta.labels[kHostnameLabel] = node.meta.name;
    KPLACE_RETURN_IF_ERROR(st_.Apply(state::NodeEvent(state::EventType::kAdded, node)));
    return node;
  }

  cycle::Scheduler* scheduler_;
  state::ClusterState& st_;
  const std::vector<Node>& templates_;
  const ScaleUpOptions& options_;
  std::vector<int64_t> next_suffix_;  // per template
  std::string last_;                  // the node added last
  ScaleUpResult out_;
};

absl::StatusOr<ScaleUpResult> ScaleUpIn(cycle::Scheduler* scheduler, const std::vector<Pod>& pods,
                                        const std::vector<Node>& templates, const ScaleUpOptions& options) {
  Planner planner(scheduler, templates, options);
  std::vector<size_t> tried;
  std::vector<cycle::Placement> skipped;
  std::set<std::string> profiles;
  for (const Profile& p : scheduler->config().profiles) profiles.insert(p.scheduler_name);
  for (size_t k = 0; k < pods.size(); ++k) {
    // Pods no cycle would try: CA leaves them out of the estimate too.
    cycle::Placement p;
    p.pod = ObjectKey(pods[k].meta);
    const PluginStatus gates = plugins::scheduling_gates::SchedulingGates().PreEnqueue(pods[k], scheduler->state().objects());
    if (!gates.IsSuccess()) {
      p.gated = true;
      p.gating_plugin = plugins::scheduling_gates::kName;
      p.code = gates.code;
      p.message = gates.Message();
    } else if (!profiles.count(pods[k].scheduler_name)) {
      p.other_scheduler = true;
      p.code = Code::kSkip;
      p.message = StrCat("left alone: no profile has schedulerName \"", pods[k].scheduler_name, "\"");
    } else {
      tried.push_back(k);
      continue;
    }
    skipped.push_back(std::move(p));
  }
  for (const Group& g : Groups(pods, tried, templates.empty() ? nullptr : &templates[0])) {
    KPLACE_RETURN_IF_ERROR(planner.PlaceGroup(pods, g));
  }
  ScaleUpResult out = planner.Take();
  for (cycle::Placement& p : skipped) out.pods.push_back(std::move(p));
  return out;
}

}  // namespace

absl::StatusOr<ScaleUpResult> ScaleUp(cycle::Scheduler* scheduler, const std::vector<Pod>& pods,
                                      const std::vector<Node>& templates, const ScaleUpOptions& options) {
  KPLACE_RETURN_IF_ERROR(Validate(scheduler, pods, templates, options));
  Fork fork(&scheduler->state());
  KPLACE_RETURN_IF_ERROR(fork.Begin());
  absl::StatusOr<ScaleUpResult> out = ScaleUpIn(scheduler, pods, templates, options);
  KPLACE_RETURN_IF_ERROR(fork.Revert());
  return out;
}

}  // namespace kplace::whatif
