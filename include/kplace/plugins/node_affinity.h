#pragma once
// NodeAffinity: node label columns, a pod's selectors compiled to a flat program of
// requirements over interned ids, and the per-node Filter and Score functions that both
// backends run (small-plugins.md §1.4-1.7, §4). Host-safe.
#include <cstdint>

#include "kplace/common/host_device.h"

namespace kplace::plugins {

// Verdict bits.
constexpr uint32_t kNodeAffinityPod = 1u << 0;       // ErrReasonPod
constexpr uint32_t kNodeAffinityEnforced = 1u << 1;  // errReasonEnforced

/** A value id no node label and no node name has. */
constexpr int32_t kNaNoValue = -2;

enum class NaOp : int32_t {
  kFalse,
  kTrue,
  kIn,            // label present and its value id among values
  kNotIn,         // label absent, or its value id not among values
  kExists,
  kDoesNotExist,
  kGt,            // label present, parses as int64, > bound
  kLt,
  kNameIn,        // metadata.name id == values[0]
  kNameNotIn,
};

/** One requirement; `slot` indexes the plugin's label columns. */
struct NaRequirement {
  NaOp op;
  int32_t slot;
  int32_t value_begin, value_count;  // into NaProgram::values
  int64_t bound;
};

/** A parsed, non-empty NodeSelectorTerm: its expressions then its fields. */
struct NaTerm {
  int32_t label_begin, label_count;  // into NaProgram::reqs; 0: no matchExpressions
  int32_t field_begin, field_count;  // 0: no matchFields
  int64_t weight;                    // preferred terms only
};

/** The node side: label columns [slot * num_nodes + node]. */
struct NaNodeView {
  int32_t num_nodes;
  const int32_t* label_ids;    // value id, -1 where the node lacks the key
  const int64_t* label_ints;   // the value parsed by ParseInt
  const uint8_t* label_int_ok;  // 1 where it parsed
  const int32_t* name_ids;     // interned metadata.name
  int32_t empty_name_id;       // id of "" (fields are not checked for nameless nodes)
};

/** A compiled pod: spans of reqs/terms (backend pointers) for each selector. */
struct NaProgram {
  const NaRequirement* reqs;
  const int32_t* values;
  const NaTerm* terms;
  int32_t selector_begin, selector_count;  // spec.nodeSelector, ANDed
  bool has_added;                          // addedAffinity.required is set
  int32_t added_begin, added_count;        // its terms, ORed
  bool has_required;                       // the pod's required affinity is set
  int32_t required_begin, required_count;  // its parsable non-empty terms, ORed
  int32_t preferred_begin, preferred_count;  // added then pod preferred terms, weighted
};

KPLACE_HOST_DEVICE inline bool NaRequirementMatches(const NaNodeView& v, const NaProgram& p,
                                                    const NaRequirement& r, int32_t i) {
  int64_t k = static_cast<int64_t>(r.slot) * v.num_nodes + i;
  switch (r.op) {
    case NaOp::kFalse:
      return false;
    case NaOp::kTrue:
      return true;
    case NaOp::kIn:
    case NaOp::kNotIn: {
      int32_t id = v.label_ids[k];
      if (id < 0) return r.op == NaOp::kNotIn;
      bool found = false;
      for (int32_t j = 0; j < r.value_count && !found; ++j) found = p.values[r.value_begin + j] == id;
      return r.op == NaOp::kIn ? found : !found;
    }
    case NaOp::kExists:
      return v.label_ids[k] >= 0;
    case NaOp::kDoesNotExist:
      return v.label_ids[k] < 0;
    case NaOp::kGt:
      return v.label_ids[k] >= 0 && v.label_int_ok[k] && v.label_ints[k] > r.bound;
    case NaOp::kLt:
      return v.label_ids[k] >= 0 && v.label_int_ok[k] && v.label_ints[k] < r.bound;
    case NaOp::kNameIn:
      return v.name_ids[i] == p.values[r.value_begin];
    case NaOp::kNameNotIn:
      return v.name_ids[i] != p.values[r.value_begin];
  }
  return false;
}

KPLACE_HOST_DEVICE inline bool NaAllMatch(const NaNodeView& v, const NaProgram& p, int32_t begin, int32_t count,
                                          int32_t i) {
  for (int32_t j = 0; j < count; ++j) {
    if (!NaRequirementMatches(v, p, p.reqs[begin + j], i)) return false;
  }
  return true;
}

KPLACE_HOST_DEVICE inline bool NaTermMatches(const NaNodeView& v, const NaProgram& p, const NaTerm& t, int32_t i) {
  if (t.label_count > 0 && !NaAllMatch(v, p, t.label_begin, t.label_count, i)) return false;
  // A nameless node has no fields, and then matchFields are not checked.
  if (t.field_count > 0 && v.name_ids[i] != v.empty_name_id && !NaAllMatch(v, p, t.field_begin, t.field_count, i)) {
    return false;
  }
  return true;
}

KPLACE_HOST_DEVICE inline bool NaAnyTermMatches(const NaNodeView& v, const NaProgram& p, int32_t begin,
                                                int32_t count, int32_t i) {
  for (int32_t j = 0; j < count; ++j) {
    if (NaTermMatches(v, p, p.terms[begin + j], i)) return true;
  }
  return false;
}

KPLACE_HOST_DEVICE inline uint32_t NodeAffinityFilterNode(const NaNodeView& v, const NaProgram& p, int32_t i) {
  if (p.has_added && !NaAnyTermMatches(v, p, p.added_begin, p.added_count, i)) return kNodeAffinityEnforced;
  if (!NaAllMatch(v, p, p.selector_begin, p.selector_count, i)) return kNodeAffinityPod;
  if (p.has_required && !NaAnyTermMatches(v, p, p.required_begin, p.required_count, i)) return kNodeAffinityPod;
  return 0;
}

KPLACE_HOST_DEVICE inline int64_t NodeAffinityScoreNode(const NaNodeView& v, const NaProgram& p, int32_t i) {
  int64_t score = 0;
  for (int32_t j = 0; j < p.preferred_count; ++j) {
    const NaTerm& t = p.terms[p.preferred_begin + j];
    if (NaTermMatches(v, p, t, i)) score += t.weight;
  }
  return score;
}

}  // namespace kplace::plugins
