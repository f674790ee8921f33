#include "kplace/plugins/volume_common.h"

#include <algorithm>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "kplace/common/strings.h"
#include "kplace/model/validation.h"
#include "kplace/plugins/node_affinity_common.h"

namespace kplace::plugins::volume {
namespace {

using json = nlohmann::json;

struct MigratedPlugin {
  const char* source_kind;
  const char* plugin;
  const char* driver;
  const char* topology_key;  // nullptr: the translator leaves topology alone
};

// csi-translation-lib's plugins that CSILimits and VolumeBinding treat as migrated.
constexpr MigratedPlugin kMigrated[kNumMigratedPlugins] = {
    {"awsElasticBlockStore", "kubernetes.io/aws-ebs", "ebs.csi.aws.com", "topology.ebs.csi.aws.com/zone"},
    {"gcePersistentDisk", "kubernetes.io/gce-pd", "pd.csi.storage.gke.io", "topology.gke.io/zone"},
    {"azureDisk", "kubernetes.io/azure-disk", "disk.csi.azure.com", nullptr},
    {"cinder", "kubernetes.io/cinder", "cinder.csi.openstack.org", "topology.cinder.csi.openstack.org/zone"},
    {"portworxVolume", "kubernetes.io/portworx-volume", "pxd.portworx.com", nullptr},
};

constexpr char kGaZone[] = "topology.kubernetes.io/zone";
constexpr char kGaRegion[] = "topology.kubernetes.io/region";
constexpr char kBetaZone[] = "failure-domain.beta.kubernetes.io/zone";
constexpr char kBetaRegion[] = "failure-domain.beta.kubernetes.io/region";

int SourceIndex(const std::string& kind) {
  for (int i = 0; i < kNumMigratedPlugins; ++i) {
    if (kind == kMigrated[i].source_kind) return i;
  }
  return -1;
}

std::vector<std::string> Split(const std::string& s, const std::string& sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t at = s.find(sep, start);
    if (at == std::string::npos) {
      out.push_back(s.substr(start));
      return out;
    }
    out.push_back(s.substr(start, at - start));
    start = at + sep.size();
  }
}

// Go's strings.TrimSpace for ASCII whitespace.
std::string TrimSpace(const std::string& s) {
  const char* ws = " \t\n\v\f\r";
  size_t b = s.find_first_not_of(ws);
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(ws);
  return s.substr(b, e - b + 1);
}

// A sets.String printed with %v: map[a:{} b:{}].
std::string GoSet(const std::set<std::string>& s) {
  std::string out = "map[";
  bool first = true;
  for (const auto& v : s) {
    out += StrCat(first ? "" : " ", v, ":{}");
    first = false;
  }
  return out + "]";
}

// KubernetesVolumeIDToEBSVolumeID: aws://<zone>/<vol-...> forms keep the path's volume id.
bool EbsVolumeId(const std::string& id, std::string* out, std::string* error) {
  const std::string scheme = "aws://";
  if (id.compare(0, scheme.size(), scheme) != 0) {
    *out = id;
    return true;
  }
  std::string rest = id.substr(scheme.size());
  size_t cut = rest.find_first_of("?#");
  if (cut != std::string::npos) rest = rest.substr(0, cut);
  size_t slash = rest.find('/');
  std::string path = slash == std::string::npos ? "" : rest.substr(slash);
  size_t b = path.find_first_not_of('/');
  size_t e = path.find_last_not_of('/');
  path = b == std::string::npos ? "" : path.substr(b, e - b + 1);
  if (path.compare(0, 4, "vol-") != 0 || path.find('/') != std::string::npos) {
    *error = StrCat("failed to translate Kubernetes ID to EBS Volume ID Invalid format for AWS volume (", id, ")");
    return false;
  }
  *out = path;
  return true;
}

// getRegionFromZones for GCE: every zone is {locale}-{region}-{zone}, one region in all.
bool GceRegion(const std::vector<std::string>& zones, std::string* region, std::string* error) {
  std::set<std::string> regions;
  for (const auto& z : zones) {
    std::vector<std::string> parts = Split(z, "-");
    if (parts.size() != 3) {
      *error = StrCat("failed to get region from zones: zone in unexpected format, expected: {locale}-{region}-{zone}, got: ", z);
      return false;
    }
    regions.insert(StrCat(parts[0], "-", parts[1]));
  }
  if (regions.size() != 1) {
    *error = StrCat("failed to get region from zones: multiple or no regions gotten from zones, got: ", GoSet(regions));
    return false;
  }
  *region = *regions.begin();
  return true;
}

bool KeyInAffinity(const std::optional<NodeSelector>& a, const std::string& key) {
  if (!a) return false;
  for (const auto& t : a->terms) {
    for (const auto& r : t.match_expressions) {
      if (r.key == key) return true;
    }
  }
  return false;
}

std::vector<std::string> AffinityValues(const std::optional<NodeSelector>& a, const std::string& key) {
  std::set<std::string> values;
  if (a) {
    for (const auto& t : a->terms) {
      for (const auto& r : t.match_expressions) {
        if (r.key == key) values.insert(r.values.begin(), r.values.end());
      }
    }
  }
  return {values.begin(), values.end()};
}

void ReplaceKey(std::optional<NodeSelector>* a, const std::string& from, const std::string& to) {
  if (!*a) return;
  for (auto& t : (*a)->terms) {
    for (auto& r : t.match_expressions) {
      if (r.key == from) r.key = to;
    }
  }
}

// translateTopologyFromInTreeToCSI: move the zone constraint to the driver's key.
void TranslateTopology(const PersistentVolume& pv, const std::string& csi_key, std::optional<NodeSelector>* affinity) {
  std::string zone = kGaZone, region = kGaRegion;
  if (KeyInAffinity(*affinity, kGaZone)) {
  } else if (KeyInAffinity(*affinity, kBetaZone)) {
    zone = kBetaZone;
    region = kBetaRegion;
  } else if (pv.meta.labels.count(kGaZone)) {
  } else if (pv.meta.labels.count(kBetaZone)) {
    zone = kBetaZone;
    region = kBetaRegion;
  }
  if (!AffinityValues(*affinity, zone).empty()) {
    ReplaceKey(affinity, zone, csi_key);
  } else if (auto it = pv.meta.labels.find(zone); it != pv.meta.labels.end()) {
    std::set<std::string> zones;
    for (const auto& z : Split(it->second, "__")) {
      std::string t = TrimSpace(z);
      if (!t.empty()) zones.insert(t);
    }
    if (!zones.empty()) {
      if (!*affinity) affinity->emplace();
      if ((*affinity)->terms.empty()) (*affinity)->terms.emplace_back();
      for (auto& t : (*affinity)->terms) {
        t.match_expressions.push_back({csi_key, "In", std::vector<std::string>(zones.begin(), zones.end())});
      }
    }
  }
  if (region == kBetaRegion && !AffinityValues(*affinity, region).empty()) ReplaceKey(affinity, region, kGaRegion);
}

json SourceJson(const Volume& v) {
  if (v.source_json.empty()) return json::object();
  json j = json::parse(v.source_json, nullptr, /*allow_exceptions=*/false);
  return j.is_object() ? j : json::object();
}

std::string JsonString(const json& j, const char* key) {
  return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : std::string();
}

bool RequirementMatches(const NodeSelectorRequirement& r, const Labels& labels) {
  auto it = labels.find(r.key);
  bool has = it != labels.end();
  auto listed = [&] { return has && std::find(r.values.begin(), r.values.end(), it->second) != r.values.end(); };
  if (r.op == "In") return listed();
  if (r.op == "NotIn") return !listed();
  if (r.op == "Exists") return has;
  if (r.op == "DoesNotExist") return !has;
  if (r.op == "Gt" || r.op == "Lt") {
    int64_t have = 0, want = 0;
    if (!has || r.values.size() != 1 || !node_affinity::ParseGoInt64(it->second, &have) ||
        !node_affinity::ParseGoInt64(r.values[0], &want)) {
      return false;
    }
    return r.op == "Gt" ? have > want : have < want;
  }
  return false;
}

}  // namespace

std::string ClaimClass(const PersistentVolumeClaim& pvc) {
  auto it = pvc.meta.annotations.find(kBetaStorageClassAnnotation);
  if (it != pvc.meta.annotations.end()) return it->second;
  return pvc.storage_class_name.value_or("");
}

std::string VolumeClass(const PersistentVolume& pv) {
  auto it = pv.meta.annotations.find(kBetaStorageClassAnnotation);
  if (it != pv.meta.annotations.end()) return it->second;
  return pv.storage_class_name;
}

bool IsFullyBound(const PersistentVolumeClaim& pvc) {
  return !pvc.volume_name.empty() && pvc.meta.annotations.count(kBindCompletedAnnotation) > 0;
}

bool UsesClaims(const Pod& pod) {
  for (const Volume& v : pod.volumes) {
    if (v.source == "persistentVolumeClaim" || v.source == "ephemeral") return true;
  }
  return false;
}

std::string EphemeralClaimName(const Pod& pod, const Volume& v) { return StrCat(pod.meta.name, "-", v.name); }

std::string EphemeralOwnerError(const Pod& pod, const PersistentVolumeClaim& pvc) {
  const OwnerReference* controller = nullptr;
  for (const auto& ref : pvc.meta.owner_references) {
    if (ref.controller) {
      controller = &ref;
      break;
    }
  }
  if (pvc.meta.namespace_ == pod.meta.namespace_ && controller && controller->uid == pod.meta.uid) return "";
  return StrCat("PVC ", pvc.meta.namespace_, "/", pvc.meta.name, " was not created for pod ", pod.meta.namespace_,
                "/", pod.meta.name, " (pod is not owner)");
}

std::string ClaimNotFound(const std::string& name) { return StrCat("persistentvolumeclaim \"", name, "\" not found"); }
std::string VolumeNotFound(const std::string& name) { return StrCat("persistentvolume \"", name, "\" not found"); }
std::string ClassNotFound(const std::string& name) {
  return StrCat("storageclass.storage.k8s.io \"", name, "\" not found");
}

int MigratedPluginIndex(std::string_view in_tree_plugin) {
  for (int i = 0; i < kNumMigratedPlugins; ++i) {
    if (in_tree_plugin == kMigrated[i].plugin) return i;
  }
  return -1;
}

const char* MigratedPluginName(int index) { return kMigrated[index].plugin; }
const char* MigratedDriverName(int index) { return kMigrated[index].driver; }

std::string InTreePluginOfSource(const std::string& source_kind) {
  int i = SourceIndex(source_kind);
  if (i >= 0) return kMigrated[i].plugin;
  if (source_kind == "azureFile") return "kubernetes.io/azure-file";
  if (source_kind == "vsphereVolume") return "kubernetes.io/vsphere-volume";
  return "";
}

bool IsMigratableProvisioner(std::string_view provisioner) {
  return MigratedPluginIndex(provisioner) >= 0 || provisioner == "kubernetes.io/azure-file" ||
         provisioner == "kubernetes.io/vsphere-volume";
}

CsiVolume TranslatePvToCsi(const PersistentVolume& pv) {
  CsiVolume out;
  int i = SourceIndex(pv.source.kind);
  if (i < 0) {
    out.error = StrCat("could not find in-tree plugin name from persistent volume ", pv.meta.name);
    return out;
  }
  out.driver = kMigrated[i].driver;
  const std::string& id = pv.source.volume_id;
  if (pv.source.kind == "awsElasticBlockStore") {
    if (!EbsVolumeId(id, &out.handle, &out.error)) return out;
  } else if (pv.source.kind == "gcePersistentDisk") {
    // The zone label (beta first) picks a zonal, regional or unspecified handle.
    auto beta = pv.meta.labels.find(kBetaZone);
    std::string label = beta != pv.meta.labels.end() ? beta->second : "";
    if (label.empty()) {
      auto ga = pv.meta.labels.find(kGaZone);
      if (ga != pv.meta.labels.end()) label = ga->second;
    }
    std::vector<std::string> zones = Split(label, "__");
    if (zones.size() == 1 && !zones[0].empty()) {
      out.handle = StrCat("projects/UNSPECIFIED/zones/", zones[0], "/disks/", id);
    } else if (zones.size() > 1) {
      std::string region;
      if (!GceRegion(zones, &region, &out.error)) return out;
      out.handle = StrCat("projects/UNSPECIFIED/regions/", region, "/disks/", id);
    } else {
      out.handle = StrCat("projects/UNSPECIFIED/zones/UNSPECIFIED/disks/", id);
    }
  } else {
    out.handle = id;
  }
  out.node_affinity = pv.node_affinity;
  if (kMigrated[i].topology_key) TranslateTopology(pv, kMigrated[i].topology_key, &out.node_affinity);
  return out;
}

CsiVolume TranslateInlineToCsi(const Volume& v) {
  CsiVolume out;
  int i = SourceIndex(v.source);
  if (i < 0) {
    out.error = StrCat("could not find in-tree plugin name from volume ", v.name);
    return out;
  }
  out.driver = kMigrated[i].driver;
  json s = SourceJson(v);
  if (v.source == "awsElasticBlockStore") {
    EbsVolumeId(v.disk_id, &out.handle, &out.error);
  } else if (v.source == "gcePersistentDisk") {
    out.handle = StrCat("projects/UNSPECIFIED/zones/UNSPECIFIED/disks/", v.disk_id);
  } else if (v.source == "azureDisk") {
    out.handle = JsonString(s, "diskURI");
  } else {
    out.handle = JsonString(s, "volumeID");  // cinder, portworxVolume
  }
  return out;
}

bool IsInlineMigratable(const Volume& v) { return !InTreePluginOfSource(v.source).empty(); }

bool CsiNodeMigrates(const CSINode& node, std::string_view plugin) {
  auto it = node.meta.annotations.find(kMigratedPluginsAnnotation);
  if (it == node.meta.annotations.end() || it->second.empty()) return false;
  for (const auto& p : Split(it->second, ",")) {
    if (p == plugin) return true;
  }
  return false;
}

bool NodeSelectorMatchesLabels(const NodeSelector& selector, const Labels& labels) {
  for (size_t t = 0; t < selector.terms.size(); ++t) {
    const NodeSelectorTerm& term = selector.terms[t];
    if (node_affinity::IsEmptyTerm(term)) continue;
    if (!node_affinity::NodeSelectorTermErrors(term, StrCat("nodeSelectorTerms[", t, "]")).empty()) continue;
    bool all = true;
    for (const auto& r : term.match_expressions) all = all && RequirementMatches(r, labels);
    if (all) return true;  // matchFields are not checked for a node without a name
  }
  return false;
}

bool LabelSelectorMatches(const LabelSelector& selector, const Labels& labels) {
  for (const auto& [k, v] : selector.match_labels) {
    auto it = labels.find(k);
    if (it == labels.end() || it->second != v) return false;
  }
  for (const auto& r : selector.match_expressions) {
    auto it = labels.find(r.key);
    bool has = it != labels.end();
    bool listed = has && std::find(r.values.begin(), r.values.end(), it->second) != r.values.end();
    if (r.op == "In" && !listed) return false;
    if (r.op == "NotIn" && listed) return false;
    if (r.op == "Exists" && !has) return false;
    if (r.op == "DoesNotExist" && has) return false;
  }
  return true;
}

bool TopologyTermsMatch(const std::vector<TopologySelectorTerm>& terms, const Labels& labels) {
  if (terms.empty()) return true;
  for (const auto& term : terms) {
    if (term.match_label_expressions.empty()) continue;
    bool valid = true, all = true;
    for (const auto& r : term.match_label_expressions) {
      // labels.NewRequirement(key, In, values) must accept the expression.
      if (!IsQualifiedName(r.key) || r.values.empty()) valid = false;
      for (const auto& v : r.values) valid = valid && IsValidLabelValue(v);
      auto it = labels.find(r.key);
      if (it == labels.end() || std::find(r.values.begin(), r.values.end(), it->second) == r.values.end()) all = false;
    }
    if (valid && all) return true;
  }
  return false;
}

std::optional<std::vector<std::string>> LabelZonesToSet(const std::string& value) {
  std::set<std::string> zones;
  for (const auto& part : Split(value, "__")) {
    std::string t = TrimSpace(part);
    if (t.empty()) return std::nullopt;
    zones.insert(t);
  }
  return std::vector<std::string>(zones.begin(), zones.end());
}

RbdDisk ParseRbd(const Volume& v) {
  RbdDisk out;
  json s = SourceJson(v);
  if (s.contains("monitors") && s["monitors"].is_array()) {
    for (const auto& m : s["monitors"]) {
      if (m.is_string()) out.monitors.push_back(m.get<std::string>());
    }
  }
  out.pool = JsonString(s, "pool");
  out.image = JsonString(s, "image");
  return out;
}

std::string IscsiIqn(const Volume& v) { return JsonString(SourceJson(v), "iqn"); }

const StorageObjects& StorageCache::Get(const ObjectSet& objects) {
  if (for_ != &objects || count_ != objects.storage.size()) {
    for_ = &objects;
    count_ = objects.storage.size();
    error_.clear();
    DecodeStorageObjects(objects.storage, &decoded_, &error_);
  }
  return decoded_;
}

}  // namespace kplace::plugins::volume
