#include "kplace/model/storage.h"

#include <nlohmann/json.hpp>

#include "kplace/common/strings.h"

namespace kplace {
namespace {

using json = nlohmann::json;

// A failed field: the first error ends decoding.
struct DecodeError {
  std::string text;
};

// Reads fields of one object; errors name the object and the field path.
class Fields {
 public:
  explicit Fields(std::string object) : object_(std::move(object)) {}

  [[noreturn]] void Fail(const std::string& path, const std::string& what) const {
    throw DecodeError{StrCat(object_, ": ", path, ": ", what)};
  }

  static bool Has(const json& j, const char* key) { return j.is_object() && j.contains(key) && !j.at(key).is_null(); }

  static std::string Join(const std::string& path, const char* key) {
    return path.empty() ? std::string(key) : StrCat(path, ".", key);
  }

  const json* Object(const json& j, const char* key, const std::string& path) const {
    if (!Has(j, key)) return nullptr;
    const json& v = j.at(key);
    if (!v.is_object()) Fail(Join(path, key), StrCat("expected an object, got ", v.type_name()));
    return &v;
  }

  std::optional<std::string> OptString(const json& j, const char* key, const std::string& path) const {
    if (!Has(j, key)) return std::nullopt;
    const json& v = j.at(key);
    if (!v.is_string()) Fail(Join(path, key), StrCat("expected a string, got ", v.type_name()));
    return v.get<std::string>();
  }

  std::string String(const json& j, const char* key, const std::string& path) const {
    return OptString(j, key, path).value_or("");
  }

  std::optional<bool> OptBool(const json& j, const char* key, const std::string& path) const {
    if (!Has(j, key)) return std::nullopt;
    const json& v = j.at(key);
    if (!v.is_boolean()) Fail(Join(path, key), StrCat("expected a boolean, got ", v.type_name()));
    return v.get<bool>();
  }

  std::optional<int64_t> OptInt(const json& j, const char* key, const std::string& path) const {
    if (!Has(j, key)) return std::nullopt;
    const json& v = j.at(key);
    if (!v.is_number_integer()) Fail(Join(path, key), StrCat("expected an integer, got ", v.dump()));
    return v.get<int64_t>();
  }

  std::vector<std::string> Strings(const json& j, const char* key, const std::string& path) const {
    std::vector<std::string> out;
    if (!Has(j, key)) return out;
    const json& v = j.at(key);
    std::string p = Join(path, key);
    if (!v.is_array()) Fail(p, StrCat("expected a list, got ", v.type_name()));
    for (size_t i = 0; i < v.size(); ++i) {
      if (!v[i].is_string()) Fail(StrCat(p, "[", i, "]"), StrCat("expected a string, got ", v[i].type_name()));
      out.push_back(v[i].get<std::string>());
    }
    return out;
  }

  // Calls fn(element, element_path) for each element of the list at key.
  template <typename Fn>
  void List(const json& j, const char* key, const std::string& path, Fn fn) const {
    if (!Has(j, key)) return;
    const json& v = j.at(key);
    std::string p = Join(path, key);
    if (!v.is_array()) Fail(p, StrCat("expected a list, got ", v.type_name()));
    for (size_t i = 0; i < v.size(); ++i) {
      std::string ep = StrCat(p, "[", i, "]");
      if (!v[i].is_object()) Fail(ep, StrCat("expected an object, got ", v[i].type_name()));
      fn(v[i], ep);
    }
  }

  std::optional<Quantity> OptQuantity(const json& j, const char* key, const std::string& path) const {
    if (!Has(j, key)) return std::nullopt;
    const json& v = j.at(key);
    std::string text;
    if (v.is_string()) {
      text = v.get<std::string>();
    } else if (v.is_number()) {
      text = v.dump();
    } else {
      Fail(Join(path, key), StrCat("expected a quantity, got ", v.type_name()));
    }
    auto q = Quantity::Parse(text);
    if (!q) Fail(Join(path, key), StrCat("invalid quantity \"", text, "\""));
    return q;
  }

  std::optional<LabelSelector> OptSelector(const json& j, const char* key, const std::string& path) const {
    const json* s = Object(j, key, path);
    if (!s) return std::nullopt;
    std::string p = Join(path, key);
    LabelSelector out;
    if (const json* m = Object(*s, "matchLabels", p)) {
      for (auto it = m->begin(); it != m->end(); ++it) {
        if (it.value().is_string()) {
          out.match_labels[it.key()] = it.value().get<std::string>();
        } else if (it.value().is_null()) {
          out.match_labels[it.key()] = "";
        } else {
          Fail(StrCat(p, ".matchLabels.", it.key()), StrCat("expected a string, got ", it.value().type_name()));
        }
      }
    }
    List(*s, "matchExpressions", p, [&](const json& e, const std::string& ep) {
      LabelSelectorRequirement r;
      r.key = String(e, "key", ep);
      r.op = String(e, "operator", ep);
      r.values = Strings(e, "values", ep);
      out.match_expressions.push_back(std::move(r));
    });
    return out;
  }

  NodeSelector Selector(const json& j, const std::string& path) const {
    NodeSelector out;
    List(j, "nodeSelectorTerms", path, [&](const json& t, const std::string& tp) {
      NodeSelectorTerm term;
      for (const char* list : {"matchExpressions", "matchFields"}) {
        List(t, list, tp, [&](const json& e, const std::string& ep) {
          NodeSelectorRequirement r;
          r.key = String(e, "key", ep);
          r.op = String(e, "operator", ep);
          r.values = Strings(e, "values", ep);
          (std::string(list) == "matchExpressions" ? term.match_expressions : term.match_fields).push_back(std::move(r));
        });
      }
      out.terms.push_back(std::move(term));
    });
    return out;
  }

 private:
  std::string object_;
};

// The first volume source of a PV spec (or an inline volume) that counting reads.
VolumeSourceInfo SourceInfo(const Fields& f, const json& spec, const std::string& path) {
  VolumeSourceInfo out;
  static const char* const kIds[][2] = {
      {"awsElasticBlockStore", "volumeID"}, {"gcePersistentDisk", "pdName"}, {"azureDisk", "diskURI"},
      {"cinder", "volumeID"}, {"portworxVolume", "volumeID"},
  };
  if (const json* csi = f.Object(spec, "csi", path)) {
    out.kind = "csi";
    out.csi_driver = f.String(*csi, "driver", Fields::Join(path, "csi"));
    out.csi_volume_handle = f.String(*csi, "volumeHandle", Fields::Join(path, "csi"));
    return out;
  }
  for (const auto& id : kIds) {
    if (const json* s = f.Object(spec, id[0], path)) {
      out.kind = id[0];
      out.volume_id = f.String(*s, id[1], Fields::Join(path, id[0]));
      return out;
    }
  }
  // Other sources matter only by kind (migratable azureFile/vsphere, or not counted).
  static const char* const kOthers[] = {"azureFile", "vsphereVolume", "hostPath", "local", "nfs", "iscsi", "rbd",
                                        "cephfs", "fc", "flexVolume", "glusterfs"};
  for (const char* k : kOthers) {
    if (Fields::Has(spec, k)) {
      out.kind = k;
      return out;
    }
  }
  return out;
}

void DecodePv(const Fields& f, const json& j, PersistentVolume* pv) {
  const json empty = json::object();
  const json* spec = f.Object(j, "spec", "");
  if (!spec) spec = &empty;
  pv->storage_class_name = f.String(*spec, "storageClassName", "spec");
  if (const json* na = f.Object(*spec, "nodeAffinity", "spec")) {
    if (const json* req = f.Object(*na, "required", "spec.nodeAffinity")) {
      pv->node_affinity = f.Selector(*req, "spec.nodeAffinity.required");
    }
  }
  if (const json* cap = f.Object(*spec, "capacity", "spec")) pv->capacity = f.OptQuantity(*cap, "storage", "spec.capacity");
  pv->access_modes = f.Strings(*spec, "accessModes", "spec");
  pv->volume_mode = f.OptString(*spec, "volumeMode", "spec");
  pv->volume_attributes_class_name = f.String(*spec, "volumeAttributesClassName", "spec");
  if (const json* ref = f.Object(*spec, "claimRef", "spec")) {
    ObjectReference r;
    r.namespace_ = f.String(*ref, "namespace", "spec.claimRef");
    r.name = f.String(*ref, "name", "spec.claimRef");
    r.uid = f.String(*ref, "uid", "spec.claimRef");
    pv->claim_ref = std::move(r);
  }
  pv->source = SourceInfo(f, *spec, "spec");
  if (const json* status = f.Object(j, "status", "")) pv->phase = f.String(*status, "phase", "status");
}

void DecodePvc(const Fields& f, const json& j, PersistentVolumeClaim* pvc) {
  const json empty = json::object();
  const json* spec = f.Object(j, "spec", "");
  if (!spec) spec = &empty;
  pvc->storage_class_name = f.OptString(*spec, "storageClassName", "spec");
  pvc->volume_name = f.String(*spec, "volumeName", "spec");
  pvc->access_modes = f.Strings(*spec, "accessModes", "spec");
  pvc->selector = f.OptSelector(*spec, "selector", "spec");
  if (const json* res = f.Object(*spec, "resources", "spec")) {
    if (const json* req = f.Object(*res, "requests", "spec.resources")) {
      pvc->request = f.OptQuantity(*req, "storage", "spec.resources.requests");
    }
  }
  pvc->volume_mode = f.OptString(*spec, "volumeMode", "spec");
  pvc->volume_attributes_class_name = f.String(*spec, "volumeAttributesClassName", "spec");
  if (const json* status = f.Object(j, "status", "")) pvc->phase = f.String(*status, "phase", "status");
}

void DecodeClass(const Fields& f, const json& j, StorageClass* sc) {
  sc->provisioner = f.String(j, "provisioner", "");
  sc->volume_binding_mode = f.OptString(j, "volumeBindingMode", "");
  f.List(j, "allowedTopologies", "", [&](const json& t, const std::string& tp) {
    TopologySelectorTerm term;
    f.List(t, "matchLabelExpressions", tp, [&](const json& e, const std::string& ep) {
      TopologySelectorRequirement r;
      r.key = f.String(e, "key", ep);
      r.values = f.Strings(e, "values", ep);
      term.match_label_expressions.push_back(std::move(r));
    });
    sc->allowed_topologies.push_back(std::move(term));
  });
}

void DecodeCsiNode(const Fields& f, const json& j, CSINode* n) {
  const json* spec = f.Object(j, "spec", "");
  if (!spec) return;
  f.List(*spec, "drivers", "spec", [&](const json& d, const std::string& dp) {
    CSINodeDriver driver;
    driver.name = f.String(d, "name", dp);
    if (const json* a = f.Object(d, "allocatable", dp)) driver.allocatable_count = f.OptInt(*a, "count", Fields::Join(dp, "allocatable"));
    n->drivers.push_back(std::move(driver));
  });
}

void DecodeCsiDriver(const Fields& f, const json& j, CSIDriver* d) {
  const json* spec = f.Object(j, "spec", "");
  if (!spec) return;
  d->storage_capacity = f.OptBool(*spec, "storageCapacity", "spec");
  d->prevent_pod_scheduling_if_missing = f.OptBool(*spec, "preventPodSchedulingIfMissing", "spec");
}

void DecodeCapacity(const Fields& f, const json& j, CSIStorageCapacity* c) {
  c->storage_class_name = f.String(j, "storageClassName", "");
  c->node_topology = f.OptSelector(j, "nodeTopology", "");
  c->capacity = f.OptQuantity(j, "capacity", "");
  c->maximum_volume_size = f.OptQuantity(j, "maximumVolumeSize", "");
}

void DecodeAttachment(const Fields& f, const json& j, VolumeAttachment* va) {
  const json* spec = f.Object(j, "spec", "");
  if (!spec) return;
  va->attacher = f.String(*spec, "attacher", "spec");
  va->node_name = f.String(*spec, "nodeName", "spec");
  if (const json* src = f.Object(*spec, "source", "spec")) {
    va->persistent_volume_name = f.OptString(*src, "persistentVolumeName", "spec.source");
  }
}

// Appends or, when the key repeats, replaces in place.
template <typename T>
void Put(std::vector<T>* list, std::unordered_map<std::string, int32_t>* seen, const std::string& key, T value) {
  auto it = seen->find(key);
  if (it != seen->end()) {
    (*list)[it->second] = std::move(value);
    return;
  }
  seen->emplace(key, static_cast<int32_t>(list->size()));
  list->push_back(std::move(value));
}

template <typename T>
const T* Lookup(const std::vector<T>& list, const std::unordered_map<std::string, int32_t>& index,
                const std::string& key) {
  auto it = index.find(key);
  return it == index.end() ? nullptr : &list[it->second];
}

std::string NamespacedKey(const ObjectMeta& m) { return StrCat(m.namespace_, "/", m.name); }

}  // namespace

const PersistentVolume* StorageObjects::FindPv(const std::string& name) const { return Lookup(pvs, pv_, name); }
const PersistentVolumeClaim* StorageObjects::FindPvc(const std::string& namespace_, const std::string& name) const {
  return Lookup(pvcs, pvc_, StrCat(namespace_, "/", name));
}
const StorageClass* StorageObjects::FindClass(const std::string& name) const { return Lookup(classes, class_, name); }
const CSINode* StorageObjects::FindCsiNode(const std::string& name) const { return Lookup(csi_nodes, csi_node_, name); }
const CSIDriver* StorageObjects::FindCsiDriver(const std::string& name) const {
  return Lookup(csi_drivers, csi_driver_, name);
}
int32_t StorageObjects::PvIndex(const std::string& name) const {
  auto it = pv_.find(name);
  return it == pv_.end() ? -1 : it->second;
}

void StorageObjects::Index() {
  pv_.clear();
  pvc_.clear();
  class_.clear();
  csi_node_.clear();
  csi_driver_.clear();
  for (size_t i = 0; i < pvs.size(); ++i) pv_[pvs[i].meta.name] = static_cast<int32_t>(i);
  for (size_t i = 0; i < pvcs.size(); ++i) pvc_[NamespacedKey(pvcs[i].meta)] = static_cast<int32_t>(i);
  for (size_t i = 0; i < classes.size(); ++i) class_[classes[i].meta.name] = static_cast<int32_t>(i);
  for (size_t i = 0; i < csi_nodes.size(); ++i) csi_node_[csi_nodes[i].meta.name] = static_cast<int32_t>(i);
  for (size_t i = 0; i < csi_drivers.size(); ++i) csi_driver_[csi_drivers[i].meta.name] = static_cast<int32_t>(i);
}

bool DecodeStorageObjects(const std::vector<GenericObject>& objects, StorageObjects* out, std::string* error) {
  *out = StorageObjects();
  std::unordered_map<std::string, int32_t> seen[7];
  try {
    for (const GenericObject& o : objects) {
      json j = json::parse(o.json, nullptr, /*allow_exceptions=*/false);
      std::string key = o.meta.namespace_.empty() ? o.meta.name : NamespacedKey(o.meta);
      Fields f(StrCat(o.kind, " ", key));
      if (!j.is_object()) f.Fail("", "expected an object");
      if (o.kind == "PersistentVolume") {
        PersistentVolume pv;
        pv.meta = o.meta;
        DecodePv(f, j, &pv);
        Put(&out->pvs, &seen[0], key, std::move(pv));
      } else if (o.kind == "PersistentVolumeClaim") {
        PersistentVolumeClaim pvc;
        pvc.meta = o.meta;
        DecodePvc(f, j, &pvc);
        Put(&out->pvcs, &seen[1], key, std::move(pvc));
      } else if (o.kind == "StorageClass") {
        StorageClass sc;
        sc.meta = o.meta;
        DecodeClass(f, j, &sc);
        Put(&out->classes, &seen[2], key, std::move(sc));
      } else if (o.kind == "CSINode") {
        CSINode n;
        n.meta = o.meta;
        DecodeCsiNode(f, j, &n);
        Put(&out->csi_nodes, &seen[3], key, std::move(n));
      } else if (o.kind == "CSIDriver") {
        CSIDriver d;
        d.meta = o.meta;
        DecodeCsiDriver(f, j, &d);
        Put(&out->csi_drivers, &seen[4], key, std::move(d));
      } else if (o.kind == "CSIStorageCapacity") {
        CSIStorageCapacity c;
        c.meta = o.meta;
        DecodeCapacity(f, j, &c);
        Put(&out->capacities, &seen[5], key, std::move(c));
      } else if (o.kind == "VolumeAttachment") {
        VolumeAttachment va;
        va.meta = o.meta;
        DecodeAttachment(f, j, &va);
        Put(&out->attachments, &seen[6], key, std::move(va));
      }
    }
  } catch (const DecodeError& e) {
    *error = e.text;
    *out = StorageObjects();
    return false;
  }
  out->Index();
  return true;
}

}  // namespace kplace
