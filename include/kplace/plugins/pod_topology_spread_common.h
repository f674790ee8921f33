#pragma once
// Host-side matching primitives of PodTopologySpread (podtopologyspread.md §2-§3):
// pod label selectors, the default selector built from workloads, the incoming pod's
// required node placement and its NoSchedule/NoExecute tolerations. Shared by the
// reference and the engine the way request math is shared (kplace/model/requests.h);
// the plugin logic itself is written twice. Host-safe: std only, never on a device.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kplace/framework/types.h"
#include "kplace/model/objects.h"

namespace kplace::spread {

inline constexpr char kHostnameLabel[] = "kubernetes.io/hostname";
inline constexpr char kZoneLabel[] = "topology.kubernetes.io/zone";

enum class SelectorOp : uint8_t { kIn, kNotIn, kExists, kDoesNotExist };

struct SelectorRequirement {
  std::string key;
  SelectorOp op = SelectorOp::kIn;
  std::vector<std::string> values;  // In / NotIn only
};

/** A labels.Selector over pod labels: Nothing matches no label set; otherwise the AND
 *  of `requirements` (none = Everything). */
struct PodSelector {
  bool nothing = true;
  std::vector<SelectorRequirement> requirements;

  static PodSelector Everything() { return PodSelector{false, {}}; }
  bool Matches(const Labels& labels) const;
  /** True for a selector with zero requirements that is not Nothing. */
  bool Empty() const { return !nothing && requirements.empty(); }
  /** A canonical text: equal texts match the same label sets. */
  std::string Key() const;
};

/**
 * @brief metav1.LabelSelectorAsSelector: absent → Nothing, `{}` → Everything, else the
 * AND of matchLabels and matchExpressions. False with `*error` set for an invalid key,
 * value, operator or value count.
 */
bool ParsePodSelector(const std::optional<LabelSelector>& selector, PodSelector* out, std::string* error);

/** labels.SelectorFromSet: key = value for every entry, no validation. */
PodSelector SelectorFromSet(const Labels& set);

/** Adds key = value requirements for `set` in front of a selector that is not Nothing
 *  (matchLabelKeys merging). Nothing stays Nothing. */
PodSelector MergeSetIntoSelector(const Labels& set, const PodSelector& s);

/** @brief helper.DefaultSelector (§2.3): Services in the pod's namespace that select it,
 *  then its controller (ReplicationController, ReplicaSet or StatefulSet) by name. */
PodSelector DefaultSelector(const Pod& pod, const ObjectSet& objects);

/** The incoming pod's required node placement: spec.nodeSelector AND the required
 *  node affinity terms (lazy: unparsable terms never match). */
class RequiredPlacement {
 public:
  explicit RequiredPlacement(const Pod& pod);
  bool Matches(const Node& node) const;
  /** Canonical text of what Matches reads. */
  const std::string& key() const { return key_; }
  /** What Matches reads, for compiling it to label-id comparisons: spec.nodeSelector, and
   *  whether required affinity is set with its terms that can match (non-empty, parsable). */
  const Labels& node_selector() const { return node_selector_; }
  bool has_affinity() const { return has_affinity_; }
  const std::vector<NodeSelectorTerm>& terms() const { return terms_; }

 private:
  Labels node_selector_;
  bool has_affinity_ = false;
  std::vector<NodeSelectorTerm> terms_;  // non-empty terms of the required affinity
  std::string key_;
};

/** @brief True when no NoSchedule/NoExecute taint of `node` is left untolerated. */
bool ToleratesHardTaints(const std::vector<Toleration>& tolerations, const Node& node,
                         bool comparison_operators);
/** Canonical text of the tolerations. */
std::string TolerationsKey(const std::vector<Toleration>& tolerations);

/** A terminating pod never counts (deletionTimestamp set). */
inline bool IsTerminating(const Pod& pod) { return !pod.meta.deletion_timestamp.empty(); }

/** Pseudo feature gate: when on, `labelSelector: {}` counts no existing pods (the v1.28 …
 *  v1.35 behaviour, §11.1); off (the v1.37 target) it counts every pod in the namespace. */
inline constexpr char kLegacyEmptySelectorGate[] = "PodTopologySpreadLegacyEmptySelector";

}  // namespace kplace::spread
