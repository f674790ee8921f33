#include "tests/testing/model_json.h"

namespace kplace::testing {
namespace {

using json = nlohmann::json;

json Resources(const ResourceList& r) {
  json out = json::object();
  for (const auto& [name, q] : r) out[name] = q.ToString();
  return out;
}

template <typename T>
json List(const std::vector<T>& v) {
  json out = json::array();
  for (const T& x : v) out.push_back(ToJson(x));
  return out;
}

template <typename T>
json Opt(const std::optional<T>& v) {
  return v ? json(*v) : json();
}

json Selector(const std::optional<LabelSelector>& s) {
  if (!s) return nullptr;
  json exprs = json::array();
  for (const LabelSelectorRequirement& r : s->match_expressions) exprs.push_back({r.key, r.op, r.values});
  return {{"matchLabels", s->match_labels}, {"matchExpressions", exprs}};
}

json Term(const NodeSelectorTerm& t) {
  json out = {{"matchExpressions", json::array()}, {"matchFields", json::array()}};
  for (const NodeSelectorRequirement& r : t.match_expressions) out["matchExpressions"].push_back({r.key, r.op, r.values});
  for (const NodeSelectorRequirement& r : t.match_fields) out["matchFields"].push_back({r.key, r.op, r.values});
  return out;
}

json Term(const PodAffinityTerm& t) {
  return {{"labelSelector", Selector(t.label_selector)}, {"namespaces", t.namespaces},
          {"namespaceSelector", Selector(t.namespace_selector)}, {"topologyKey", t.topology_key},
          {"matchLabelKeys", t.match_label_keys}, {"mismatchLabelKeys", t.mismatch_label_keys}};
}

json PodTerms(const std::optional<PodAffinity>& a) {
  if (!a) return nullptr;
  json out = {{"required", json::array()}, {"preferred", json::array()}};
  for (const PodAffinityTerm& t : a->required) out["required"].push_back(Term(t));
  for (const WeightedPodAffinityTerm& t : a->preferred) out["preferred"].push_back({t.weight, Term(t.term)});
  return out;
}

json Affinity(const std::optional<kplace::Affinity>& a) {
  if (!a) return nullptr;
  json node = nullptr;
  if (a->node_affinity) {
    const NodeAffinity& n = *a->node_affinity;
    json required = nullptr;
    if (n.required) {
      required = json::array();
      for (const NodeSelectorTerm& t : n.required->terms) required.push_back(Term(t));
    }
    json preferred = json::array();
    for (const PreferredSchedulingTerm& t : n.preferred) preferred.push_back({t.weight, Term(t.preference)});
    node = {{"required", required}, {"preferred", preferred}, {"preferredSet", n.preferred_set}};
  }
  return {{"nodeAffinity", node}, {"podAffinity", PodTerms(a->pod_affinity)},
          {"podAntiAffinity", PodTerms(a->pod_anti_affinity)}};
}

json Containers(const std::vector<Container>& cs) {
  json out = json::array();
  for (const Container& c : cs) {
    json ports = json::array();
    for (const ContainerPort& p : c.ports) ports.push_back({p.container_port, p.host_port, p.protocol, p.host_ip});
    out.push_back({{"name", c.name}, {"image", c.image}, {"requests", Resources(c.requests)},
                   {"limits", Resources(c.limits)}, {"restartPolicy", Opt(c.restart_policy)}, {"ports", ports}});
  }
  return out;
}

}  // namespace

json ToJson(const ObjectMeta& m) {
  json owners = json::array();
  for (const OwnerReference& o : m.owner_references) owners.push_back({o.api_version, o.kind, o.name, o.uid, o.controller});
  return {{"name", m.name}, {"namespace", m.namespace_}, {"uid", m.uid}, {"labels", m.labels},
          {"annotations", m.annotations}, {"creationTimestamp", m.creation_timestamp},
          {"creationUnix", m.creation_unix}, {"deletionTimestamp", m.deletion_timestamp}, {"ownerReferences", owners}};
}

json ToJson(const Node& n) {
  json taints = json::array(), images = json::array();
  for (const Taint& t : n.taints) taints.push_back({t.key, t.value, t.effect});
  for (const ContainerImage& i : n.images) images.push_back({i.names, i.size_bytes});
  return {{"meta", ToJson(n.meta)}, {"unschedulable", n.unschedulable}, {"taints", taints},
          {"allocatable", Resources(n.allocatable)}, {"capacity", Resources(n.capacity)}, {"images", images}};
}

json ToJson(const Pod& p) {
  json tolerations = json::array(), spread = json::array(), volumes = json::array(), claims = json::array(),
       conditions = json::array();
  for (const Toleration& t : p.tolerations) tolerations.push_back({t.key, t.op, t.value, t.effect, Opt(t.toleration_seconds)});
  for (const TopologySpreadConstraint& c : p.topology_spread_constraints) {
    spread.push_back({{"maxSkew", c.max_skew}, {"topologyKey", c.topology_key}, {"whenUnsatisfiable", c.when_unsatisfiable},
                      {"labelSelector", Selector(c.label_selector)}, {"minDomains", Opt(c.min_domains)},
                      {"nodeAffinityPolicy", Opt(c.node_affinity_policy)}, {"nodeTaintsPolicy", Opt(c.node_taints_policy)},
                      {"matchLabelKeys", c.match_label_keys}});
  }
  for (const Volume& v : p.volumes) {
    volumes.push_back({v.name, v.source, v.claim_name, v.read_only, v.image_reference, v.disk_id, v.source_json});
  }
  for (const PodResourceClaim& c : p.resource_claims) {
    claims.push_back({c.name, c.resource_claim_name, c.resource_claim_template_name});
  }
  for (const PodCondition& c : p.conditions) conditions.push_back({c.type, c.status, c.reason, c.message});
  return {{"meta", ToJson(p.meta)},
          {"nodeName", p.node_name},
          {"schedulerName", p.scheduler_name},
          {"priority", Opt(p.priority)},
          {"priorityClassName", p.priority_class_name},
          {"preemptionPolicy", p.preemption_policy},
          {"containers", Containers(p.containers)},
          {"initContainers", Containers(p.init_containers)},
          {"overhead", Resources(p.overhead)},
          {"podRequests", p.pod_requests ? Resources(*p.pod_requests) : json()},
          {"podLimits", p.pod_limits ? Resources(*p.pod_limits) : json()},
          {"nodeSelector", p.node_selector},
          {"nodeSelectorSet", p.node_selector_set},
          {"affinity", Affinity(p.affinity)},
          {"tolerations", tolerations},
          {"topologySpreadConstraints", spread},
          {"volumes", volumes},
          {"schedulingGates", p.scheduling_gates},
          {"schedulingGroup", p.scheduling_group},
          {"resourceClaims", claims},
          {"phase", p.phase},
          {"nominatedNodeName", p.nominated_node_name},
          {"startTimeNs", Opt(p.start_time_ns)},
          {"conditions", conditions}};
}

json ToJson(const Namespace& n) { return {{"meta", ToJson(n.meta)}}; }

json ToJson(const GenericObject& o) {
  return {{"kind", o.kind}, {"meta", ToJson(o.meta)}, {"json", json::parse(o.json)}};
}

json ToJson(const Workload& w) {
  return {{"kind", w.kind}, {"meta", ToJson(w.meta)}, {"selector", Selector(w.selector)}};
}

json ToJson(const PodDisruptionBudget& b) {
  return {{"meta", ToJson(b.meta)}, {"selector", Selector(b.selector)}, {"disruptionsAllowed", b.disruptions_allowed},
          {"disruptedPods", b.disrupted_pods}};
}

json ToJson(const PriorityClass& c) {
  return {{"meta", ToJson(c.meta)}, {"value", c.value}, {"globalDefault", c.global_default},
          {"preemptionPolicy", c.preemption_policy}};
}

json ToJson(const ObjectSet& s) {
  json configs = json::array();
  for (const GenericObject& c : s.configs) configs.push_back(ToJson(c));
  return {{"nodes", List(s.nodes)}, {"pods", List(s.pods)}, {"namespaces", List(s.namespaces)},
          {"workloads", List(s.workloads)}, {"storage", List(s.storage)}, {"configs", configs},
          {"pdbs", List(s.pdbs)}, {"priorityClasses", List(s.priority_classes)}};
}

}  // namespace kplace::testing
