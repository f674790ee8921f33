#include "kplace/plugins/volume_binding_assume.h"

namespace kplace::plugins::volume {
namespace {

std::string Key(const ObjectMeta& meta) { return meta.namespace_ + "/" + meta.name; }

// IsVolumeBoundToClaim: name and namespace, and the uid when the reference has one.
bool BoundTo(const PersistentVolume& pv, const PersistentVolumeClaim& pvc) {
  if (!pv.claim_ref) return false;
  const ObjectReference& ref = *pv.claim_ref;
  return ref.name == pvc.meta.name && ref.namespace_ == pvc.meta.namespace_ && (ref.uid.empty() || ref.uid == pvc.meta.uid);
}

}  // namespace

void VolumeAssumeCache::Assume(const Pod& pod, const std::string& node,
                               const std::vector<std::pair<int32_t, int32_t>>& static_bindings,
                               const std::vector<int32_t>& provisions) {
  StorageObjects& st = *cache_.mutable_objects();
  const std::string pod_key = Key(pod.meta);
  // GetBindVolumeToClaim: a reference to the claim unless the PV already holds exactly
  // this one (uid compared as is); the annotation only when the PV was not bound to it.
  for (const auto& [claim, volume] : static_bindings) {
    const PersistentVolumeClaim& pvc = st.pvcs[claim];
    PersistentVolume& pv = st.pvs[volume];
    const bool was_bound = BoundTo(pv, pvc);
    if (!pv.claim_ref || pv.claim_ref->name != pvc.meta.name || pv.claim_ref->namespace_ != pvc.meta.namespace_ ||
        pv.claim_ref->uid != pvc.meta.uid) {
      pv.claim_ref = ObjectReference{pvc.meta.namespace_, pvc.meta.name, pvc.meta.uid};
    }
    if (!was_bound) pv.meta.annotations.emplace(kBoundByControllerAnnotation, "yes");
    assumed_.push_back({pod_key, node, Key(pvc.meta), pv.meta.name});
  }
  for (int32_t claim : provisions) {
    PersistentVolumeClaim& pvc = st.pvcs[claim];
    pvc.meta.annotations[kSelectedNodeAnnotation] = node;
    assumed_.push_back({pod_key, node, Key(pvc.meta), ""});
  }
}

}  // namespace kplace::plugins::volume
