#pragma once
// OpportunisticBatching (KEP-5598; feature gate OpportunisticBatching, on by default since
// v1.35): upstream's own reuse of one cycle's ranking for the next pods with the same pod
// signature, in its 2026 form with rescoring. Unlike kplace's batched runs (batch.h), which
// never change a decision, this is a behaviour of the real scheduler that changes where
// pods land, so the cycle reproduces it exactly (docs/batching.md, "OpportunisticBatching").
//
// Per profile the batch keeps the signature of the pod that ranked the nodes, the rest of
// that cycle's score heap (every feasible node but the chosen one, with its raw scores),
// and the last cycle (counter, chosen node, success). A pod gets a hint when it is the very
// next cycle after a success of its profile, has no nominated node, signs equal and the
// state is young enough; then the last chosen node is filtered for it: rejected, the head
// of the heap is the hint; still feasible, it is scored again, added to the heap, every
// entry normalized again over the new set, and the head is the hint. The hint is tried as
// a nominated node is.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "kplace/config/profile.h"
#include "kplace/framework/types.h"
#include "kplace/model/objects.h"

namespace kplace::cycle {

/** A node scored in a cycle, as the batch keeps it. */
struct ScoredNode {
  int32_t node = -1;         // snapshot row; -1 when the node left since
  int64_t total = 0;         // weighted sum of the normalized scores
  std::vector<int64_t> raw;  // per score plugin of the profile, as Score gave it (0 when skipped)
};

/** Go's container/heap over ScoredNode, greater total first and no randomizer (no
 *  extenders): upstream's SortedScoredNodes, entry for entry, so that equal totals pop in
 *  the order Go's sift-down leaves them. */
class ScoreHeap {
 public:
  /** heap.Init over `nodes` in the given order. */
  void Init(std::vector<ScoredNode> nodes);
  /** heap.Pop: the root, then the last entry sifted down from the root. */
  ScoredNode Pop();
  bool empty() const { return h_.empty(); }
  size_t size() const { return h_.size(); }
  /** The entries in the heap's internal order (upstream's UnorderedList). */
  const std::vector<ScoredNode>& entries() const { return h_; }
  std::vector<ScoredNode>& mutable_entries() { return h_; }

 private:
  void Down(size_t i, size_t n);
  std::vector<ScoredNode> h_;
};

/** True when `profile` can sign pods: every PreFilter, Filter, PreScore and Score plugin
 *  implements pod signing (all in-tree plugins kplace runs do), PodTopologySpread has no
 *  default constraints (System defaulting always has some) and the resource plugins are not
 *  refusing under DRAExtendedResource. `unsigned_plugins`: the profile holds a plugin known
 *  not to sign (a conformance test stand-in). */
bool ProfileSignsPods(const Profile& profile, const FeatureGates& gates, bool unsigned_plugins = false);

/** @brief The pod's signature for OpportunisticBatching in a profile that signs pods: its
 *  scheduler name and, per plugin of the profile, what upstream's signer takes of the pod
 *  (node name; tolerations; node affinity and node selector; host port numbers; effective
 *  resource requests; volume sources other than ConfigMaps and Secrets; labels, unless
 *  InterPodAffinity ignores existing pods' preferred terms; normalized image names), each in
 *  a canonical order. nullopt when a plugin refuses the pod: spread constraints, pod
 *  (anti-)affinity set at all, resource claims. Namespace, priority and limits are not part
 *  of it, as upstream's is not. */
std::optional<std::string> BatchSignature(const Pod& pod, const Profile& profile, const FeatureGates& gates);

class Encoder;  // src/cycle/pod_encoder.h

/** BatchSignature for one profile, with what it asks of the profile worked out once. */
class PodSigner {
 public:
  PodSigner(const Profile& profile, const FeatureGates& gates);
  std::optional<std::string> Sign(const Pod& pod) const;
  /** Sign(pod) == signature, decided without building the signature. */
  bool Matches(const Pod& pod, const std::string& signature) const;

 private:
  bool Encode(const Pod& pod, Encoder& e) const;  // false: unsignable

  bool spread_ = false, inter_pod_affinity_ = false, refuses_ = false;
  bool node_name_ = false, tolerations_ = false, node_affinity_ = false, host_ports_ = false, resources_ = false,
       volumes_ = false, labels_ = false, images_ = false;
  bool pod_level_resources_ = false;
};

/** One profile's batch state (upstream's OpportunisticBatch). */
class OpportunisticBatch {
 public:
  /** The hint checks before the signature's: a state with nodes left, this is the cycle
   *  right after the profile's last success, the pod has no nominated node, the state has
   *  not expired. */
  bool Chained(int64_t cycle, bool pod_nominated, bool expired) const;
  /** The signature of the pod that ranked the state's nodes (none: no state). */
  const std::optional<std::string>& signature() const { return signature_; }
  /** The node the profile's last successful cycle chose (-1 when none or it left). */
  int32_t last_chosen() const { return last_chosen_; }
  /** The cycle that stored the state (its age is counted from there). */
  int64_t created() const { return created_; }
  /** Score plugins PreScore skipped in the cycle that ranked the heap. */
  const std::vector<bool>& skipped() const { return skipped_; }
  ScoreHeap& heap() { return heap_; }
  /** After a successful cycle `cycle` that chose `chosen` (`hinted`: the hint it was given,
   *  -1 when none): the chain goes on; a hint taken keeps the state; otherwise the state
   *  becomes `rest` (the cycle's heap after popping `chosen`; null when it scored nothing)
   *  when the pod signed and `rest` has nodes, else it empties (so `signature` is read only
   *  when `rest` has nodes and the hint was not taken). */
  void Store(int64_t cycle, const std::optional<std::string>& signature, int32_t hinted, int32_t chosen,
             ScoreHeap* rest, const std::vector<bool>& skipped);
  /** Empties the state after a failed hint check (the chain's last cycle stays). */
  void Drop();
  /** Pods placed on their hint so far (upstream's batchedPods). */
  int64_t hinted_pods() const { return hinted_pods_; }
  /** Renumbers every node after the snapshot's rows changed (`row` maps old to new, -1 when
   *  the node is gone). */
  void Remap(const std::function<int32_t(int32_t)>& row);

 private:
  std::optional<std::string> signature_;
  ScoreHeap heap_;
  std::vector<bool> skipped_;
  int64_t created_ = 0;
  int64_t last_cycle_ = -2;
  int32_t last_chosen_ = -1;
  bool succeeded_ = false;
  int64_t hinted_pods_ = 0;
};

}  // namespace kplace::cycle
