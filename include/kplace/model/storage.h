#pragma once
// Typed storage objects: the fields of PersistentVolume, PersistentVolumeClaim,
// StorageClass, CSINode, CSIDriver, CSIStorageCapacity and VolumeAttachment that the
// storage plugins read (volumes.md). Decoded once from ObjectSet::storage.
// Host-safe (no Abseil, no nlohmann): the engine's plugin sources include it.
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "kplace/model/objects.h"
#include "kplace/model/quantity.h"

namespace kplace {

struct ObjectReference {
  std::string namespace_, name, uid;
};

/** The volume source of a PV or an inline pod volume, as far as CSI counting and
 *  migration read it. `kind` is the source's field name ("csi", "awsElasticBlockStore",
 *  "gcePersistentDisk", "azureDisk", "cinder", "portworxVolume", "azureFile",
 *  "vsphereVolume", "hostPath", ...); "" when none is given. */
struct VolumeSourceInfo {
  std::string kind;
  std::string csi_driver, csi_volume_handle;  // kind == "csi"
  // awsElasticBlockStore.volumeID, gcePersistentDisk.pdName, azureDisk.diskURI,
  // cinder.volumeID, portworxVolume.volumeID.
  std::string volume_id;
};

struct PersistentVolume {
  ObjectMeta meta;
  std::string storage_class_name;          // spec.storageClassName
  std::optional<NodeSelector> node_affinity;  // spec.nodeAffinity.required
  std::optional<Quantity> capacity;        // spec.capacity.storage
  std::vector<std::string> access_modes;
  std::optional<std::string> volume_mode;  // nil reads as Filesystem
  std::string volume_attributes_class_name;  // nil reads as ""
  std::string phase;                       // status.phase
  std::optional<ObjectReference> claim_ref;
  VolumeSourceInfo source;
};

struct PersistentVolumeClaim {
  ObjectMeta meta;
  std::optional<std::string> storage_class_name;  // spec.storageClassName (nil vs "")
  std::string volume_name;
  std::vector<std::string> access_modes;
  std::optional<LabelSelector> selector;
  std::optional<Quantity> request;  // spec.resources.requests.storage; nil when the key is absent
  std::optional<std::string> volume_mode;
  std::string volume_attributes_class_name;
  std::string phase;
};

struct TopologySelectorRequirement {
  std::string key;
  std::vector<std::string> values;
};

struct TopologySelectorTerm {
  std::vector<TopologySelectorRequirement> match_label_expressions;
};

struct StorageClass {
  ObjectMeta meta;
  std::string provisioner;
  std::optional<std::string> volume_binding_mode;  // not defaulted: absent is an error upstream
  std::vector<TopologySelectorTerm> allowed_topologies;
};

struct CSINodeDriver {
  std::string name;
  std::optional<int64_t> allocatable_count;  // spec.drivers[].allocatable.count
};

struct CSINode {
  ObjectMeta meta;
  std::vector<CSINodeDriver> drivers;
};

struct CSIDriver {
  ObjectMeta meta;
  std::optional<bool> storage_capacity;                   // spec.storageCapacity
  std::optional<bool> prevent_pod_scheduling_if_missing;  // spec.preventPodSchedulingIfMissing
};

struct CSIStorageCapacity {
  ObjectMeta meta;
  std::string storage_class_name;
  std::optional<LabelSelector> node_topology;
  std::optional<Quantity> capacity, maximum_volume_size;
};

struct VolumeAttachment {
  ObjectMeta meta;
  std::string attacher, node_name;
  std::optional<std::string> persistent_volume_name;  // spec.source.persistentVolumeName
};

/** Every storage object in input order, with the lookups listers give. An object whose
 *  key repeats replaces the earlier one in place, as an informer store would. */
class StorageObjects {
 public:
  std::vector<PersistentVolume> pvs;
  std::vector<PersistentVolumeClaim> pvcs;
  std::vector<StorageClass> classes;
  std::vector<CSINode> csi_nodes;
  std::vector<CSIDriver> csi_drivers;
  std::vector<CSIStorageCapacity> capacities;
  std::vector<VolumeAttachment> attachments;

  /** Null when absent. */
  const PersistentVolume* FindPv(const std::string& name) const;
  const PersistentVolumeClaim* FindPvc(const std::string& namespace_, const std::string& name) const;
  const StorageClass* FindClass(const std::string& name) const;
  const CSINode* FindCsiNode(const std::string& name) const;
  const CSIDriver* FindCsiDriver(const std::string& name) const;
  /** Index of a PV in `pvs`, -1 when absent. */
  int32_t PvIndex(const std::string& name) const;

  /** Rebuilds the lookups after the vectors were filled. */
  void Index();

 private:
  std::unordered_map<std::string, int32_t> pv_, pvc_, class_, csi_node_, csi_driver_;
};

/**
 * @brief Decodes the storage objects of an ObjectSet (GenericObject JSON) into `out`.
 * Returns false with `*error` naming the object and field on malformed input (a
 * quantity that does not parse, a field of the wrong type). Host-safe so that kernels
 * sources can call it; src/ callers wrap the text in a Status.
 */
bool DecodeStorageObjects(const std::vector<GenericObject>& objects, StorageObjects* out, std::string* error);

}  // namespace kplace
