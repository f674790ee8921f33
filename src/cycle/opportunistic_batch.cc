#include "kplace/cycle/opportunistic_batch.h"

#include <algorithm>
#include <utility>

#include "kplace/model/requests.h"
#include "pod_encoder.h"

namespace kplace::cycle {

// ---- ScoreHeap: container/heap with Less(i, j) = total[i] > total[j] ----

void ScoreHeap::Down(size_t i, size_t n) {
  for (;;) {
    const size_t left = 2 * i + 1;
    if (left >= n) return;
    size_t j = left;
    if (left + 1 < n && h_[left + 1].total > h_[left].total) j = left + 1;
    if (!(h_[j].total > h_[i].total)) return;
    std::swap(h_[i], h_[j]);
    i = j;
  }
}

void ScoreHeap::Init(std::vector<ScoredNode> nodes) {
  h_ = std::move(nodes);
  const size_t n = h_.size();
  for (size_t i = n / 2; i-- > 0;) Down(i, n);
}

ScoredNode ScoreHeap::Pop() {
  const size_t n = h_.size() - 1;
  std::swap(h_[0], h_[n]);
  Down(0, n);
  ScoredNode top = std::move(h_.back());
  h_.pop_back();
  return top;
}

// ---- signing ----
//
// Upstream's framework asks each PreFilter, Filter, PreScore and Score plugin for fragments
// of the pod (keys shared by plugins that read the same field) and marshals them with the
// scheduler name; a plugin that refuses makes the pod unsignable. The fragments here carry
// the same information in a canonical form, so two pods sign equal exactly when upstream's
// signatures are byte-equal.

namespace {

bool Has(const std::vector<std::string>& plugins, const char* name) {
  return std::find(plugins.begin(), plugins.end(), name) != plugins.end();
}

// Upstream's resource signer is off while DRAExtendedResource is on (the plugins refuse).
bool ResourcePluginsRefuse(const std::vector<std::string>& plugins, const FeatureGates& gates) {
  return (Has(plugins, "NodeResourcesFit") || Has(plugins, "NodeResourcesBalancedAllocation")) &&
         gates.Enabled("DRAExtendedResource");
}

// ImageLocality's normalized image name: ":latest" when the reference has no tag.
std::string NormalizedImage(const std::string& image) {
  const size_t colon = image.rfind(':'), slash = image.rfind('/');
  if (colon == std::string::npos || (slash != std::string::npos && colon < slash)) return image + ":latest";
  return image;
}

template <typename T, typename F>
void SortedList(Encoder& e, std::vector<T> items, F encode) {
  std::vector<std::string> parts;
  for (const T& item : items) {
    Encoder one;
    encode(one, item);
    parts.push_back(one.Take());
  }
  std::sort(parts.begin(), parts.end());
  e.Strings(parts);
}

void NodeRequirements(Encoder& e, const std::vector<NodeSelectorRequirement>& reqs) {
  SortedList(e, reqs, [](Encoder& one, NodeSelectorRequirement r) {
    std::sort(r.values.begin(), r.values.end());
    one.Str(r.key);
    one.Str(r.op);
    one.Strings(r.values);
  });
}

void NodeTermOf(Encoder& e, const NodeSelectorTerm& t) {
  NodeRequirements(e, t.match_expressions);
  NodeRequirements(e, t.match_fields);
}

}  // namespace

bool ProfileSignsPods(const Profile& profile, const FeatureGates& gates, bool unsigned_plugins) {
  if (unsigned_plugins) return false;
  const std::vector<std::string> plugins = profile.AllPlugins();
  // PodTopologySpread refuses every pod while it has default constraints (System always has).
  if (Has(plugins, "PodTopologySpread") && (profile.args.pod_topology_spread.defaulting_type == "System" ||
                                            !profile.args.pod_topology_spread.default_constraints.empty())) {
    return false;
  }
  return !ResourcePluginsRefuse(plugins, gates);
}

PodSigner::PodSigner(const Profile& profile, const FeatureGates& gates) {
  const std::vector<std::string> plugins = profile.AllPlugins();
  spread_ = Has(plugins, "PodTopologySpread");
  inter_pod_affinity_ = Has(plugins, "InterPodAffinity");
  refuses_ = ResourcePluginsRefuse(plugins, gates);
  node_name_ = Has(plugins, "NodeName");
  tolerations_ = Has(plugins, "TaintToleration") || Has(plugins, "NodeUnschedulable");
  node_affinity_ = Has(plugins, "NodeAffinity");
  host_ports_ = Has(plugins, "NodePorts");
  resources_ = Has(plugins, "NodeResourcesFit") || Has(plugins, "NodeResourcesBalancedAllocation");
  volumes_ = Has(plugins, "VolumeBinding") || Has(plugins, "VolumeRestrictions") || Has(plugins, "NodeVolumeLimits") ||
             Has(plugins, "VolumeZone");
  labels_ = inter_pod_affinity_ && !profile.args.inter_pod_affinity.ignore_preferred_terms_of_existing_pods;
  images_ = Has(plugins, "ImageLocality");
  pod_level_resources_ = gates.Enabled("PodLevelResources");
}

std::optional<std::string> BatchSignature(const Pod& pod, const Profile& profile, const FeatureGates& gates) {
  return PodSigner(profile, gates).Sign(pod);
}

std::optional<std::string> PodSigner::Sign(const Pod& pod) const {
  Encoder e;
  if (!Encode(pod, e)) return std::nullopt;
  return e.Take();
}

bool PodSigner::Matches(const Pod& pod, const std::string& signature) const {
  Encoder e(&signature);
  return Encode(pod, e) && e.Matches();
}

bool PodSigner::Encode(const Pod& pod, Encoder& e) const {
  if (spread_ && !pod.topology_spread_constraints.empty()) return false;
  if (inter_pod_affinity_ && pod.affinity && (pod.affinity->pod_affinity || pod.affinity->pod_anti_affinity)) {
    return false;
  }
  if (!pod.resource_claims.empty()) return false;  // DynamicResources refuses claims
  if (refuses_) return false;

  e.Str(pod.scheduler_name);
  auto fragment = [&](bool present, const char* key, const auto& encode) {
    e.Bool(present);
    if (!present) return;
    e.Str(key);
    encode();
  };
  fragment(node_name_, "NodeName", [&] { e.Str(pod.node_name); });
  fragment(tolerations_, "Tolerations", [&] {
    SortedList(e, pod.tolerations, [](Encoder& one, const Toleration& t) {
      one.Str(t.key);
      one.Str(t.value);
      one.Str(t.op);
      one.Str(t.effect);
      one.Opt(t.toleration_seconds, [&](int64_t v) { one.I64(v); });
    });
  });
  fragment(node_affinity_, "NodeAffinity", [&] {
    const NodeAffinity* na = pod.affinity && pod.affinity->node_affinity ? &*pod.affinity->node_affinity : nullptr;
    e.Bool(na != nullptr);
    if (na) {
      SortedList(e, na->required ? na->required->terms : std::vector<NodeSelectorTerm>{},
                 [](Encoder& one, const NodeSelectorTerm& t) { NodeTermOf(one, t); });
      SortedList(e, na->preferred, [](Encoder& one, const PreferredSchedulingTerm& t) {
        one.I64(t.weight);
        NodeTermOf(one, t.preference);
      });
    }
    e.StrMap(pod.node_selector);
  });
  fragment(host_ports_, "HostPorts", [&] {
    std::vector<int64_t> ports;  // the non-zero host ports, sorted, each once
    for (const auto* list : {&pod.containers, &pod.init_containers}) {
      for (const Container& c : *list) {
        for (const ContainerPort& p : c.ports) {
          if (p.host_port != 0) ports.push_back(p.host_port);
        }
      }
    }
    std::sort(ports.begin(), ports.end());
    ports.erase(std::unique(ports.begin(), ports.end()), ports.end());
    e.List(ports, [&](int64_t p) { e.I64(p); });
  });
  fragment(resources_, "Resources", [&] {
    const Resource r = Resource::From(PodRequests(pod, nullptr, pod_level_resources_), false);
    e.I64(r.milli_cpu);
    e.I64(r.memory);
    e.I64(r.ephemeral_storage);
    e.U32(static_cast<uint32_t>(r.scalars.size()));
    for (const auto& [name, v] : r.scalars) {
      e.Str(name);
      e.I64(v);
    }
  });
  fragment(volumes_, "Volumes", [&] {
             std::vector<Volume> kept;  // every source but ConfigMaps and Secrets, names dropped
             for (const Volume& v : pod.volumes) {
               if (v.source != "configMap" && v.source != "secret") kept.push_back(v);
             }
             SortedList(e, kept, [](Encoder& one, const Volume& v) {
               one.Str(v.source);
               one.Str(v.source_json);
             });
           });
  fragment(labels_, "Labels", [&] { e.StrMap(pod.meta.labels); });
  fragment(images_, "ImageNames", [&] {
    std::vector<std::string> images;
    for (const auto* list : {&pod.containers, &pod.init_containers}) {
      for (const Container& c : *list) images.push_back(NormalizedImage(c.image));
    }
    std::sort(images.begin(), images.end());
    e.Strings(images);
  });
  return true;
}

// ---- OpportunisticBatch ----

bool OpportunisticBatch::Chained(int64_t cycle, bool pod_nominated, bool expired) const {
  if (heap_.empty()) return false;
  if (cycle != last_cycle_ + 1) return false;  // another profile's pod, or a failed cycle, in between
  if (!succeeded_) return false;
  if (pod_nominated) return false;
  return !expired;
}

void OpportunisticBatch::Store(int64_t cycle, const std::optional<std::string>& signature, int32_t hinted,
                               int32_t chosen, ScoreHeap* rest, const std::vector<bool>& skipped) {
  last_cycle_ = cycle;
  last_chosen_ = chosen;
  succeeded_ = true;
  if (hinted >= 0 && hinted == chosen) {
    ++hinted_pods_;
    return;
  }
  if (signature && rest && !rest->empty()) {
    signature_ = signature;
    heap_ = std::move(*rest);
    skipped_ = skipped;
    created_ = cycle;
  } else {
    Drop();
  }
}

void OpportunisticBatch::Drop() {
  signature_.reset();
  heap_ = ScoreHeap();
  skipped_.clear();
}

void OpportunisticBatch::Remap(const std::function<int32_t(int32_t)>& row) {
  if (last_chosen_ >= 0) last_chosen_ = row(last_chosen_);
  for (ScoredNode& s : heap_.mutable_entries()) {
    if (s.node >= 0) s.node = row(s.node);
  }
}

}  // namespace kplace::cycle
