#pragma once
// Host helpers shared by the four storage plugins (VolumeRestrictions, VolumeZone,
// NodeVolumeLimits, VolumeBinding), engine and reference alike: the storage helper
// rules of upstream's component-helpers (claim class, bound claims, ephemeral claims),
// csi-translation-lib (in-tree to CSI identity and PV topology) and the lister texts
// (volumes.md §1). Plugin logic itself is written separately on each side.
// Host-only, host-safe (no Abseil, no nlohmann, no CUDA).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kplace/model/objects.h"
#include "kplace/model/storage.h"

namespace kplace::plugins::volume {

constexpr char kBetaStorageClassAnnotation[] = "volume.beta.kubernetes.io/storage-class";
constexpr char kBindCompletedAnnotation[] = "pv.kubernetes.io/bind-completed";
constexpr char kSelectedNodeAnnotation[] = "volume.kubernetes.io/selected-node";
constexpr char kMigratedPluginsAnnotation[] = "storage.alpha.kubernetes.io/migrated-plugins";
constexpr char kNotSupportedProvisioner[] = "kubernetes.io/no-provisioner";
constexpr char kWaitForFirstConsumer[] = "WaitForFirstConsumer";
constexpr char kReadWriteOncePod[] = "ReadWriteOncePod";

/** The four topology label keys VolumeZone reads, in upstream's order. */
constexpr const char* kTopologyKeys[4] = {
    "failure-domain.beta.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/region",
    "topology.kubernetes.io/zone", "topology.kubernetes.io/region"};

// ---- claims and classes (§1.2-§1.4, §1.8, §1.9) --------------------------------------

/** class(PVC): the beta annotation when present (even empty), else spec.storageClassName. */
std::string ClaimClass(const PersistentVolumeClaim& pvc);
/** class(PV): the beta annotation when present, else spec.storageClassName. */
std::string VolumeClass(const PersistentVolume& pv);
/** volumeName set and the bind-completed annotation present. */
bool IsFullyBound(const PersistentVolumeClaim& pvc);
/** Some volume of the pod is a PersistentVolumeClaim or a generic ephemeral volume. The
 *  volume plugins' Skip for a pod without one depends on the pod alone. */
bool UsesClaims(const Pod& pod);
/** `<pod>-<volume>`: the claim a generic ephemeral volume uses. */
std::string EphemeralClaimName(const Pod& pod, const Volume& v);
/** "" when the claim's controller owner is the pod, else upstream's error text. */
std::string EphemeralOwnerError(const Pod& pod, const PersistentVolumeClaim& pvc);

/** The informer listers' NotFound texts (production, singular resource names). */
std::string ClaimNotFound(const std::string& name);
std::string VolumeNotFound(const std::string& name);
std::string ClassNotFound(const std::string& name);

// ---- CSI migration (§1.7) ---------------------------------------------------------------

/** The in-tree plugins whose volumes are counted or translated: aws-ebs, gce-pd,
 *  azure-disk, cinder, portworx-volume. */
constexpr int kNumMigratedPlugins = 5;
/** 0..4 for one of the five plugin names, -1 otherwise. */
int MigratedPluginIndex(std::string_view in_tree_plugin);
const char* MigratedPluginName(int index);
const char* MigratedDriverName(int index);
/** The in-tree plugin name for a volume source kind ("" when the translator has none);
 *  besides the five, azureFile and vsphereVolume are migratable but never "on". */
std::string InTreePluginOfSource(const std::string& source_kind);
/** A provisioner name the translator knows as an in-tree plugin (the five, azure-file, vsphere). */
bool IsMigratableProvisioner(std::string_view provisioner);

/** A PV or inline volume after csi-translation-lib; `error` set when translation fails. */
struct CsiVolume {
  std::string error;
  std::string driver, handle;
  std::optional<NodeSelector> node_affinity;  // translated PV node affinity (PVs only)
};

/** TranslateInTreePVToCSI for a PV whose source is one of the five in-tree kinds. */
CsiVolume TranslatePvToCsi(const PersistentVolume& pv);
/** TranslateInTreeInlineVolumeToCSI for an inline volume of one of the five kinds. */
CsiVolume TranslateInlineToCsi(const Volume& v);
/** A pod volume the translator can migrate (the five kinds, azureFile, vsphereVolume). */
bool IsInlineMigratable(const Volume& v);

/** The migrated-plugins annotation of a CSINode contains `plugin` (split on ",", no trim). */
bool CsiNodeMigrates(const CSINode& node, std::string_view plugin);

// ---- selectors over a label map -------------------------------------------------------------

/** CheckNodeAffinity's matcher: `selector` against a node that has only `labels` and no
 *  name (so matchFields are not checked); terms ORed, empty or unparsable terms never match. */
bool NodeSelectorMatchesLabels(const NodeSelector& selector, const Labels& labels);
/** A parsed metav1.LabelSelector against labels; callers check parse errors first. */
bool LabelSelectorMatches(const LabelSelector& selector, const Labels& labels);
/** v1helper.MatchTopologySelectorTerms: empty list matches all; a term matches when every
 *  expression's key is present with a listed value; invalid or empty terms never match. */
bool TopologyTermsMatch(const std::vector<TopologySelectorTerm>& terms, const Labels& labels);
/** volumehelpers.LabelZonesToSet: split on "__", trim; nullopt when a part is empty. */
std::optional<std::vector<std::string>> LabelZonesToSet(const std::string& value);

// ---- disk identities (VolumeRestrictions §5.2) ------------------------------------------

struct RbdDisk {
  std::vector<std::string> monitors;
  std::string pool, image;
};
RbdDisk ParseRbd(const Volume& v);
std::string IscsiIqn(const Volume& v);

// ---- decoded storage, once per object set ---------------------------------------------------

/** Decodes ObjectSet::storage on first use and again only when the set changes. */
class StorageCache {
 public:
  /** The decoded objects (empty when decoding failed; see error()). */
  const StorageObjects& Get(const ObjectSet& objects);
  /** The decode error of the last Get, "" when it decoded. */
  const std::string& error() const { return error_; }
  /** The objects of the last Get, for a cache that writes into them (VolumeAssumeCache). */
  StorageObjects* mutable_objects() { return &decoded_; }

 private:
  const ObjectSet* for_ = nullptr;
  size_t count_ = 0;
  StorageObjects decoded_;
  std::string error_;
};

}  // namespace kplace::plugins::volume
