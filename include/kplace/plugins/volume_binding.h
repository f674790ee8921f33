#pragma once
// VolumeBinding (volumes.md §2): the pod's claims compiled on the host into flat arrays
// of POD records that point at per-node verdict tables (PV node affinity, class
// allowedTopologies, CSIStorageCapacity nodeTopology; each built once per object and
// kept), and FindPodVolumes per node as a function both backends run: bound claims,
// static matching (smallest fitting PV, exclusions, pre-bound PVs), provisioning with
// capacity, then the StorageCapacityScoring score of the node. Run on the chosen node
// alone, the same function says what Reserve assumes there. Host-safe.
#include <cstdint>

#include "kplace/common/host_device.h"
#include "kplace/framework/types.h"

namespace kplace::plugins {

constexpr int kVbMaxDelayClaims = 64;     // WaitForFirstConsumer claims per pod on the engine
constexpr int kVbMaxShapePoints = 101;

// Verdict bits; any of the first four is UnschedulableAndUnresolvable with the reasons
// in this order. kVbError: an Error whose message index is in the low bits.
constexpr uint32_t kVbNodeConflict = 1u << 0;
constexpr uint32_t kVbUnbound = 1u << 1;
constexpr uint32_t kVbNoSpace = 1u << 2;
constexpr uint32_t kVbPvMissing = 1u << 3;
constexpr uint32_t kVbError = 1u << 31;

/** A fully bound claim. Tables hold 1 per node that matches; null matches every node. */
struct VbBound {
  bool missing;              // its PV does not exist
  int32_t plugin;            // migratable in-tree plugin of the PV (0..4), -1
  const uint8_t* affinity;   // PV node affinity as given
  const uint8_t* translated;  // after CSI translation (nodes that migrate `plugin`)
  int32_t translate_error;   // message index when translation fails, -1
};

/** A PV some claim may bind to. */
struct VbPv {
  const uint8_t* affinity;  // null matches every node
  int32_t rank;             // capacity order among the pod's PVs
  int32_t class_id;         // spec.storageClassName, for score grouping
  int64_t capacity;         // capacity Value()
};

/** A PV that passed a claim's node-independent checks, in PV cache order. */
struct VbCandidate {
  int32_t pv;
  bool prebound;  // claimRef names the claim: taken (or nothing) when reached
};

/** A CSIStorageCapacity of the claim's class whose limit fits the request, lister order. */
struct VbCapacity {
  const uint8_t* topology;  // nodeTopology matches; null: matches no node
  int64_t capacity;         // capacity Value(), 0 when nil
};

/** A WaitForFirstConsumer claim without a volume. */
struct VbClaim {
  int64_t request;        // Value(), 0 when absent
  int32_t class_id;       // spec.storageClassName, for score grouping
  int32_t cand_offset, cand_count;
  int32_t provision_error;  // message index (no class, class missing), -1
  bool can_provision;       // the class has a provisioner that provisions
  const uint8_t* topology;  // allowedTopologies; null: every node
  bool check_capacity;      // a request and a CSIDriver with storageCapacity
  int32_t cap_offset, cap_count;
};

struct VbNodeView {
  const uint8_t* migrated;  // bit p: the node's CSINode migrates in-tree plugin p
};

struct VbParams {
  bool has_state;       // PreFilter succeeded or skipped
  int32_t no_state_error;  // message index for Filter without state
  bool scoring;
  int32_t num_bound;
  const VbBound* bound;
  const VbClaim* claims;
  int32_t num_delay;
  const int32_t* match_order;  // claims without a selected node, by request
  int32_t num_match;
  const int32_t* selected;     // claims with a selected node, in order
  int32_t num_selected;
  int32_t selected_node;  // -1: none selects; -2: no node is selected by all; else that node
  int32_t match_error;    // message index: a claim selector does not parse, -1
  const VbPv* pvs;
  const VbCandidate* cands;
  const VbCapacity* caps;
  int32_t num_points;
  int32_t shape_utilization[kVbMaxShapePoints];
  int64_t shape_score[kVbMaxShapePoints];  // scaled by 10
  int64_t* score;  // per node output: the node's score when it passes
  // Output for Reserve, null in Filter: per WaitForFirstConsumer claim, when the node
  // passes, the PV (index into pvs) it is matched to, or -1 when it is provisioned.
  int32_t* picks;
};

KPLACE_HOST_DEVICE inline int64_t VbShape(const VbParams& p, int64_t u) {
  for (int32_t j = 0; j < p.num_points; ++j) {
    if (u <= p.shape_utilization[j]) {
      if (j == 0) return p.shape_score[0];
      return p.shape_score[j - 1] + (p.shape_score[j] - p.shape_score[j - 1]) * (u - p.shape_utilization[j - 1]) /
                                        (p.shape_utilization[j] - p.shape_utilization[j - 1]);
    }
  }
  return p.shape_score[p.num_points - 1];
}

/** Sums per class, then the rounded mean of the shaped utilizations. */
KPLACE_HOST_DEVICE inline int64_t VbClassScore(const VbParams& p, int32_t n, const int64_t* req, const int64_t* cap) {
  if (n == 0) return 0;
  int64_t sum = 0;
  for (int32_t c = 0; c < n; ++c) {
    int64_t u = kMaxNodeScore;
    // Go's int64 product wraps; so does this one.
    if (cap[c] != 0 && req[c] <= cap[c]) {
      u = static_cast<int64_t>(static_cast<uint64_t>(req[c]) * static_cast<uint64_t>(kMaxNodeScore)) / cap[c];
    }
    sum += VbShape(p, u);
  }
  return (2 * sum + n) / (2 * n);  // math.Round of a non-negative mean
}

KPLACE_HOST_DEVICE inline void VbAddToClass(int32_t id, int64_t req, int64_t cap, bool sum_cap, int32_t* n,
                                            int32_t* ids, int64_t* reqs, int64_t* caps) {
  int32_t c = 0;
  while (c < *n && ids[c] != id) ++c;
  if (c == *n) {
    ids[c] = id;
    reqs[c] = 0;
    caps[c] = 0;
    ++*n;
  }
  reqs[c] += req;
  caps[c] = sum_cap ? caps[c] + cap : cap;
}

/** FindPodVolumes on node i: the verdict, and the score through p.score[i]. */
KPLACE_HOST_DEVICE inline uint32_t VolumeBindingFilterNode(const VbNodeView& v, const VbParams& p, int32_t i) {
  p.score[i] = 0;
  if (!p.has_state) return kVbError | static_cast<uint32_t>(p.no_state_error);
  bool bound_ok = true, unbound_ok = true, space_ok = true, pvs_found = true;
  for (int32_t b = 0; b < p.num_bound; ++b) {
    const VbBound& c = p.bound[b];
    if (c.missing) {
      pvs_found = false;
      break;
    }
    bool migrated = c.plugin >= 0 && ((v.migrated[i] >> c.plugin) & 1u);
    if (migrated && c.translate_error >= 0) return kVbError | static_cast<uint32_t>(c.translate_error);
    const uint8_t* table = migrated ? c.translated : c.affinity;
    if (table && !table[i]) {
      bound_ok = false;
      break;
    }
  }
  int32_t num_static = 0, num_dynamic = 0, num_unmatched = 0;
  int32_t static_claim[kVbMaxDelayClaims], static_pv[kVbMaxDelayClaims];
  int32_t dynamic_claim[kVbMaxDelayClaims], dynamic_cap[kVbMaxDelayClaims], unmatched[kVbMaxDelayClaims];
  if (p.num_delay > 0) {
    if (p.selected_node == -2 || (p.selected_node >= 0 && p.selected_node != i)) {
      unbound_ok = false;
    } else {
      if (p.num_match > 0) {
        if (p.match_error >= 0) return kVbError | static_cast<uint32_t>(p.match_error);
        for (int32_t m = 0; m < p.num_match; ++m) {
          const VbClaim& c = p.claims[p.match_order[m]];
          int32_t best = -1, picked = -1;
          bool prebound = false;
          for (int32_t k = c.cand_offset; k < c.cand_offset + c.cand_count; ++k) {
            const int32_t pv = p.cands[k].pv;
            bool chosen = false;
            for (int32_t s = 0; s < num_static; ++s) chosen = chosen || static_pv[s] == pv;
            if (chosen) continue;
            const uint8_t* table = p.pvs[pv].affinity;
            bool fits = !table || table[i];
            if (p.cands[k].prebound) {
              picked = fits ? pv : -1;
              prebound = true;
              break;
            }
            if (fits && (best < 0 || p.pvs[pv].rank < p.pvs[best].rank)) best = pv;
          }
          if (!prebound) picked = best;
          if (picked < 0) {
            unmatched[num_unmatched++] = p.match_order[m];
            unbound_ok = false;
          } else {
            static_claim[num_static] = p.match_order[m];
            static_pv[num_static++] = picked;
          }
        }
      }
      if (p.num_selected + num_unmatched > 0) {
        // Provisioning decides afresh: a claim no PV fits may still be provisioned here.
        unbound_ok = true;
        space_ok = true;
        for (int32_t j = 0; j < p.num_selected + num_unmatched; ++j) {
          int32_t m = j < p.num_selected ? p.selected[j] : unmatched[j - p.num_selected];
          const VbClaim& c = p.claims[m];
          if (c.provision_error >= 0) return kVbError | static_cast<uint32_t>(c.provision_error);
          if (!c.can_provision || (c.topology && !c.topology[i])) {
            unbound_ok = false;
            break;
          }
          int32_t cap = -1;
          if (c.check_capacity) {
            for (int32_t k = c.cap_offset; k < c.cap_offset + c.cap_count && cap < 0; ++k) {
              if (p.caps[k].topology && p.caps[k].topology[i]) cap = k;
            }
            if (cap < 0) {
              space_ok = false;
              break;
            }
          }
          dynamic_claim[num_dynamic] = m;
          dynamic_cap[num_dynamic++] = cap;
        }
      }
    }
  }
  uint32_t code = (bound_ok ? 0u : kVbNodeConflict) | (unbound_ok ? 0u : kVbUnbound) | (space_ok ? 0u : kVbNoSpace) |
                  (pvs_found ? 0u : kVbPvMissing);
  if (code == 0 && p.picks) {
    // A passing node decided every claim: matched, or (selected or unmatched) provisioned.
    for (int32_t s = 0; s < num_static; ++s) p.picks[static_claim[s]] = static_pv[s];
    for (int32_t d = 0; d < num_dynamic; ++d) p.picks[dynamic_claim[d]] = -1;
  }
  if (code != 0 || !p.scoring) return code;
  // Static bindings take precedence; dynamic provisions count only with a capacity object.
  int32_t n = 0, ids[kVbMaxDelayClaims];
  int64_t reqs[kVbMaxDelayClaims], caps[kVbMaxDelayClaims];
  if (num_static > 0) {
    for (int32_t s = 0; s < num_static; ++s) {
      const VbPv& pv = p.pvs[static_pv[s]];
      VbAddToClass(pv.class_id, p.claims[static_claim[s]].request, pv.capacity, true, &n, ids, reqs, caps);
    }
  } else {
    for (int32_t d = 0; d < num_dynamic; ++d) {
      if (dynamic_cap[d] < 0) continue;
      const VbClaim& c = p.claims[dynamic_claim[d]];
      VbAddToClass(c.class_id, c.request, p.caps[dynamic_cap[d]].capacity, false, &n, ids, reqs, caps);
    }
  }
  p.score[i] = VbClassScore(p, n, reqs, caps);
  return 0;
}

}  // namespace kplace::plugins
