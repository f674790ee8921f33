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

std::optional<std::string> BatchSignature(const Pod& pod, const Profile& profile, const FeatureGates& gates) {
  const std::vector<std::string> plugins = profile.AllPlugins();
  if (Has(plugins, "PodTopologySpread") && !pod.topology_spread_constraints.empty()) return std::nullopt;
  const bool ipa = Has(plugins, "InterPodAffinity");
  if (ipa && pod.affinity && (pod.affinity->pod_affinity || pod.affinity->pod_anti_affinity)) return std::nullopt;
  if (!pod.resource_claims.empty()) return std::nullopt;  // DynamicResources refuses claims
  if (ResourcePluginsRefuse(plugins, gates)) return std::nullopt;

  Encoder e;
  e.Str(pod.scheduler_name);
  auto fragment = [&](bool present, const char* key, const auto& encode) {
    e.Bool(present);
    if (!present) return;
    e.Str(key);
    encode();
  };
  fragment(Has(plugins, "NodeName"), "NodeName", [&] { e.Str(pod.node_name); });
  fragment(Has(plugins, "TaintToleration") || Has(plugins, "NodeUnschedulable"), "Tolerations", [&] {
    SortedList(e, pod.tolerations, [](Encoder& one, const Toleration& t) {
      one.Str(t.key);
      one.Str(t.value);
      one.Str(t.op);
      one.Str(t.effect);
      one.Opt(t.toleration_seconds, [&](int64_t v) { one.I64(v); });
    });
  });
  fragment(Has(plugins, "NodeAffinity"), "NodeAffinity", [&] {
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
  fragment(Has(plugins, "NodePorts"), "HostPorts", [&] {
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
  fragment(Has(plugins, "NodeResourcesFit") || Has(plugins, "NodeResourcesBalancedAllocation"), "Resources", [&] {
    const Resource r = Resource::From(PodRequests(pod, nullptr, gates.Enabled("PodLevelResources")), false);
    e.I64(r.milli_cpu);
    e.I64(r.memory);
    e.I64(r.ephemeral_storage);
    e.U32(static_cast<uint32_t>(r.scalars.size()));
    for (const auto& [name, v] : r.scalars) {
      e.Str(name);
      e.I64(v);
    }
  });
  fragment(Has(plugins, "VolumeBinding") || Has(plugins, "VolumeRestrictions") || Has(plugins, "NodeVolumeLimits") ||
               Has(plugins, "VolumeZone"),
           "Volumes", [&] {
             std::vector<Volume> kept;  // every source but ConfigMaps and Secrets, names dropped
             for (const Volume& v : pod.volumes) {
               if (v.source != "configMap" && v.source != "secret") kept.push_back(v);
             }
             SortedList(e, kept, [](Encoder& one, const Volume& v) {
               one.Str(v.source);
               one.Str(v.source_json);
             });
           });
  fragment(ipa && !profile.args.inter_pod_affinity.ignore_preferred_terms_of_existing_pods, "Labels",
           [&] { e.StrMap(pod.meta.labels); });
  fragment(Has(plugins, "ImageLocality"), "ImageNames", [&] {
    std::vector<std::string> images;
    for (const auto* list : {&pod.containers, &pod.init_containers}) {
      for (const Container& c : *list) images.push_back(NormalizedImage(c.image));
    }
    std::sort(images.begin(), images.end());
    e.Strings(images);
  });
  return e.Take();
}

// ---- OpportunisticBatch ----

bool OpportunisticBatch::Compatible(int64_t cycle, bool pod_nominated, const std::optional<std::string>& signature,
                                    bool expired) const {
  if (heap_.empty()) return false;
  if (cycle != last_cycle_ + 1) return false;  // another profile's pod, or a failed cycle, in between
  if (!succeeded_) return false;
  if (pod_nominated) return false;
  if (!signature || !signature_ || *signature != *signature_) return false;
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
