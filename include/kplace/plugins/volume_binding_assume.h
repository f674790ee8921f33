#pragma once
// VolumeBinding's memory across pods (volumes.md §2.6): upstream's PV and PVC assume
// caches for one scheduling run. Reserve calls AssumePodVolumes with what FindPodVolumes
// found for the chosen node, and the next pod's PreFilter and Filter read the result:
//  - a claim matched to an existing PV: the PV's claimRef now names the claim (name,
//    namespace, uid), plus the bound-by-controller annotation when the PV was not
//    already bound to it, so no other claim can take the PV and the same claim finds
//    it pre-bound;
//  - a claim to be provisioned: the claim gets the selected-node annotation, which
//    pins every later pod that uses it to that node.
// Nothing else changes: the scheduler does not decrement CSIStorageCapacity, and the PV
// controller's binding and the provisioner's new PV come later, outside the scheduler.
// Upstream keeps these caches per profile until PreBind's writes reach every profile's
// informers; kplace keeps one per run, shared by the profiles, as after those writes.
// The engine's Snapshot and the reference's ClusterState each hold one. Host-only,
// host-safe (no Abseil, no nlohmann).
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "kplace/model/objects.h"
#include "kplace/model/storage.h"
#include "kplace/plugins/volume_common.h"

namespace kplace::plugins::volume {

constexpr char kBoundByControllerAnnotation[] = "pv.kubernetes.io/bound-by-controller";

/** One decision Reserve assumed, as PreBind would write it. */
struct AssumedVolume {
  std::string pod;     // namespace/name of the pod reserved
  std::string node;    // the node chosen for it
  std::string claim;   // namespace/name
  std::string volume;  // the PV the claim was matched to; "" when it is to be provisioned

  bool operator==(const AssumedVolume& o) const {
    return pod == o.pod && node == o.node && claim == o.claim && volume == o.volume;
  }
};

/** The PVs and claims of one run as the scheduler's assume caches hold them. */
class VolumeAssumeCache {
 public:
  /** The storage objects with every assumption so far written in, decoded on first use
   *  (empty when decoding failed; see error()). Every call must pass the same object set:
   *  another set decodes afresh and drops the assumptions. */
  const StorageObjects& Get(const ObjectSet& objects) { return cache_.Get(objects); }
  /** The decode error, "" when the objects decoded. */
  const std::string& error() const { return cache_.error(); }

  /**
   * @brief AssumePodVolumes for `pod` reserved on node `node`: `static_bindings` are
   * (claim, PV) pairs and `provisions` claims, as indices into Get()'s `pvcs` and `pvs`,
   * each in FindPodVolumes' order. Binding a PV to the claim it is already bound to is
   * a no-op, as is selecting the node a claim already selects.
   */
  void Assume(const Pod& pod, const std::string& node, const std::vector<std::pair<int32_t, int32_t>>& static_bindings,
              const std::vector<int32_t>& provisions);

  /** Every assumption so far, in the order made: per pod its static bindings, then its
   *  provisions. */
  const std::vector<AssumedVolume>& assumed() const { return assumed_; }

 private:
  StorageCache cache_;
  std::vector<AssumedVolume> assumed_;
};

}  // namespace kplace::plugins::volume
