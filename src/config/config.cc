// KubeSchedulerConfiguration v1: strict decoding, defaulting, the per-point plugin-set merge
// with the default MultiPoint list, MultiPoint expansion, score weights and validation
// (cycle-and-config.md §4).
#include "kplace/config/config.h"

#include <algorithm>
#include <utility>

#include <nlohmann/json.hpp>

#include "kplace/common/status.h"
#include "kplace/common/strings.h"
#include "kplace/model/decode.h"
#include "kplace/model/input_file.h"
#include "src/config/field_reader.h"

namespace kplace {
namespace {

using config_internal::CheckFields;
using config_internal::ExpectObject;
using config_internal::FieldPath;
using config_internal::GetArray;
using config_internal::GetBool;
using config_internal::GetInt;
using config_internal::GetString;
using config_internal::Has;
using config_internal::Quote;
using json = nlohmann::json;

constexpr char kApiVersion[] = "kubescheduler.config.k8s.io/v1";
constexpr char kKind[] = "KubeSchedulerConfiguration";
constexpr char kDefaultSchedulerName[] = "default-scheduler";

struct PointSpec {
  const char* key;       // field under `plugins`
  const char* upstream;  // extension point name in messages
  unsigned bit;
};

// Every specific point of v1 `plugins`; each is merged, only some are kept in a Profile.
constexpr PointSpec kPoints[] = {
    {"preEnqueue", "PreEnqueue", kPreEnqueueConfigPoint}, {"queueSort", "QueueSort", kQueueSortConfigPoint},
    {"preFilter", "PreFilter", kPreFilterConfigPoint},    {"filter", "Filter", kFilterConfigPoint},
    {"postFilter", "PostFilter", kPostFilterConfigPoint}, {"preScore", "PreScore", kPreScoreConfigPoint},
    {"score", "Score", kScoreConfigPoint},                {"reserve", "Reserve", kReserveConfigPoint},
    {"permit", "Permit", kPermitConfigPoint},             {"preBind", "PreBind", kPreBindConfigPoint},
    {"bind", "Bind", kBindConfigPoint},                   {"postBind", "PostBind", kPostBindConfigPoint},
};
constexpr size_t kNumPoints = sizeof(kPoints) / sizeof(kPoints[0]);

struct PluginEntry {
  std::string name;
  int32_t weight = 0;  // 0 = unset
  friend bool operator==(const PluginEntry& a, const PluginEntry& b) {
    return a.name == b.name && a.weight == b.weight;
  }
};

struct PluginSet {
  std::vector<PluginEntry> enabled;
  std::vector<std::string> disabled;
  bool Disables(const std::string& name) const {
    return std::find(disabled.begin(), disabled.end(), name) != disabled.end();
  }
  friend bool operator==(const PluginSet& a, const PluginSet& b) {
    return a.enabled == b.enabled && a.disabled == b.disabled;
  }
};

bool Contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// `point` is a PointSpec for a specific point, or nullptr for multiPoint (which accepts any
// registered plugin and expands it only where it fits).
absl::Status DecodePluginSet(const json& j, const FieldPath& p, const PointSpec* point, PluginSet* out) {
  KPLACE_RETURN_IF_ERROR(ExpectObject(j, p));
  KPLACE_RETURN_IF_ERROR(CheckFields(j, p, {"enabled", "disabled"}));
  const json* enabled = nullptr;
  KPLACE_RETURN_IF_ERROR(GetArray(j, "enabled", p, &enabled));
  for (size_t i = 0; enabled && i < enabled->size(); ++i) {
    const json& e = (*enabled)[i];
    FieldPath ep = p.Key("enabled").Index(i);
    KPLACE_RETURN_IF_ERROR(ExpectObject(e, ep));
    KPLACE_RETURN_IF_ERROR(CheckFields(e, ep, {"name", "weight"}));
    PluginEntry entry;
    KPLACE_RETURN_IF_ERROR(GetString(e, "name", ep, &entry.name));
    KPLACE_RETURN_IF_ERROR(GetInt(e, "weight", ep, &entry.weight));
    FieldPath np = ep.Key("name");
    if (entry.name.empty()) return np.Error("required");
    if (PluginIsRemoved(entry.name)) {
      return np.Error(StrCat("plugin ", Quote(entry.name), " was removed in v1.31 and is invalid in ", kApiVersion));
    }
    unsigned points = PluginConfigPoints(entry.name);
    if (points == 0) return np.Error(StrCat("unknown plugin ", Quote(entry.name)));
    if (point && !(points & point->bit)) {
      return np.Error(StrCat("plugin ", Quote(entry.name), " does not implement ", point->upstream));
    }
    // v1 accepts any int32; a negative weight would invert the plugin's preference.
    if (entry.weight < 0) return ep.Key("weight").Error(StrCat("must not be negative, got ", entry.weight));
    out->enabled.push_back(std::move(entry));
  }
  const json* disabled = nullptr;
  KPLACE_RETURN_IF_ERROR(GetArray(j, "disabled", p, &disabled));
  for (size_t i = 0; disabled && i < disabled->size(); ++i) {
    const json& e = (*disabled)[i];
    FieldPath ep = p.Key("disabled").Index(i);
    KPLACE_RETURN_IF_ERROR(ExpectObject(e, ep));
    KPLACE_RETURN_IF_ERROR(CheckFields(e, ep, {"name", "weight"}));
    std::string name;
    KPLACE_RETURN_IF_ERROR(GetString(e, "name", ep, &name));
    if (name.empty()) return ep.Key("name").Error("required");
    // Upstream ignores disabling a plugin that is not there, so unknown names pass.
    out->disabled.push_back(std::move(name));
  }
  return absl::OkStatus();
}

// mergePlugins for one set (§4.2): defaults in order unless disabled, a re-enabled default
// replaced in place, every other user plugin appended; "*" drops all defaults.
PluginSet MergeSet(const PluginSet& def, const PluginSet& cus) {
  PluginSet out;
  out.disabled = cus.disabled;
  out.disabled.insert(out.disabled.end(), def.disabled.begin(), def.disabled.end());
  std::vector<bool> used(cus.enabled.size(), false);
  if (!out.Disables("*")) {
    for (const PluginEntry& d : def.enabled) {
      if (out.Disables(d.name)) continue;
      // The last user entry of a name is the one that replaces the default.
      int replaced = -1;
      for (size_t i = 0; i < cus.enabled.size(); ++i) {
        if (cus.enabled[i].name == d.name) replaced = static_cast<int>(i);
      }
      if (replaced >= 0) {
        out.enabled.push_back(cus.enabled[replaced]);
        used[replaced] = true;
      } else {
        out.enabled.push_back(d);
      }
    }
  }
  for (size_t i = 0; i < cus.enabled.size(); ++i) {
    if (!used[i]) out.enabled.push_back(cus.enabled[i]);
  }
  return out;
}

// MultiPoint expansion at one point (§4.2): overrides named at the point first, then the
// MultiPoint plugins not named there, then the point's remaining plugins.
absl::StatusOr<std::vector<std::string>> ExpandPoint(const PointSpec& pt, const PluginSet& set,
                                                     const PluginSet& multi, const FieldPath& plugins_path) {
  std::vector<std::string> own;
  for (size_t i = 0; i < set.enabled.size(); ++i) {
    const std::string& name = set.enabled[i].name;
    if (Contains(own, name)) {
      return plugins_path.Key(pt.key).Key("enabled").Index(i).Error(
          StrCat("plugin ", Quote(name), " is enabled more than once at ", pt.upstream));
    }
    own.push_back(name);
  }
  if (set.Disables("*")) return own;
  std::vector<std::string> overrides, taken;
  for (const PluginEntry& m : multi.enabled) {
    if (!(PluginConfigPoints(m.name) & pt.bit) || set.Disables(m.name)) continue;
    if (Contains(own, m.name)) {
      overrides.push_back(m.name);
      continue;
    }
    if (Contains(taken, m.name)) {
      return plugins_path.Key("multiPoint").Error(
          StrCat("plugin ", Quote(m.name), " is enabled more than once (expanding to ", pt.upstream, ")"));
    }
    taken.push_back(m.name);
  }
  std::vector<std::string> out;
  for (const std::string& n : own) {
    if (Contains(overrides, n)) out.push_back(n);
  }
  out.insert(out.end(), taken.begin(), taken.end());
  for (const std::string& n : own) {
    if (!Contains(overrides, n)) out.push_back(n);
  }
  return out;
}

absl::Status CheckPercentage(const json& obj, const FieldPath& p, std::optional<int32_t>* out) {
  bool present = false;
  int32_t value = 0;
  KPLACE_RETURN_IF_ERROR(GetInt(obj, "percentageOfNodesToScore", p, &value, &present));
  if (!present) return absl::OkStatus();
  if (value < 0 || value > 100) {
    return p.Key("percentageOfNodesToScore").Error(StrCat("must be in [0, 100], got ", value));
  }
  *out = value;
  return absl::OkStatus();
}

// A profile in the making: its merged sets are kept for the cross-profile QueueSort check.
struct DecodedProfile {
  Profile profile;
  std::optional<std::string> scheduler_name;  // unset until defaulted
  PluginSet merged_queue_sort;
};

std::vector<std::string> Modelled(const std::vector<std::string>& names) {
  std::vector<std::string> out;
  for (const std::string& n : names) {
    if (PluginIsModelled(n)) out.push_back(n);
  }
  return out;
}

absl::Status DecodeProfile(const json& j, const FieldPath& p, DecodedProfile* out) {
  KPLACE_RETURN_IF_ERROR(ExpectObject(j, p));
  KPLACE_RETURN_IF_ERROR(CheckFields(j, p, {"schedulerName", "percentageOfNodesToScore", "plugins", "pluginConfig"}));
  Profile& prof = out->profile;
  if (Has(j, "schedulerName")) {
    std::string name;
    KPLACE_RETURN_IF_ERROR(GetString(j, "schedulerName", p, &name));
    out->scheduler_name = name;
  }
  KPLACE_RETURN_IF_ERROR(CheckPercentage(j, p, &prof.percentage_of_nodes_to_score));

  // User plugin sets; v1 puts every default under multiPoint, so specific points merge
  // against empty defaults.
  FieldPath pp = p.Key("plugins");
  PluginSet user_multi, user[kNumPoints];
  if (Has(j, "plugins")) {
    const json& plugins = j.at("plugins");
    KPLACE_RETURN_IF_ERROR(ExpectObject(plugins, pp));
    KPLACE_RETURN_IF_ERROR(CheckFields(plugins, pp, {"multiPoint", "preEnqueue", "queueSort", "preFilter", "filter",
                                                     "postFilter", "preScore", "score", "reserve", "permit",
                                                     "preBind", "bind", "postBind"}));
    if (Has(plugins, "multiPoint")) {
      KPLACE_RETURN_IF_ERROR(DecodePluginSet(plugins.at("multiPoint"), pp.Key("multiPoint"), nullptr, &user_multi));
    }
    for (size_t i = 0; i < kNumPoints; ++i) {
      if (!Has(plugins, kPoints[i].key)) continue;
      KPLACE_RETURN_IF_ERROR(DecodePluginSet(plugins.at(kPoints[i].key), pp.Key(kPoints[i].key), &kPoints[i], &user[i]));
    }
  }

  PluginSet default_multi;
  for (const WeightedPlugin& w : DefaultMultiPointPlugins()) {
    default_multi.enabled.push_back({w.name, static_cast<int32_t>(w.weight)});
  }
  PluginSet multi = MergeSet(default_multi, user_multi);
  PluginSet merged[kNumPoints];
  std::vector<std::string> expanded[kNumPoints];
  for (size_t i = 0; i < kNumPoints; ++i) {
    merged[i] = MergeSet(PluginSet{}, user[i]);
    KPLACE_ASSIGN_OR_RETURN(expanded[i], ExpandPoint(kPoints[i], merged[i], multi, pp));
  }
  auto index_of = [](unsigned bit) {
    for (size_t i = 0; i < kNumPoints; ++i) {
      if (kPoints[i].bit == bit) return i;
    }
    return kNumPoints;
  };
  size_t queue_sort = index_of(kQueueSortConfigPoint), bind = index_of(kBindConfigPoint);
  if (expanded[queue_sort].size() != 1) {
    return pp.Key("queueSort").Error(
        StrCat("exactly one QueueSort plugin must be enabled, got ", expanded[queue_sort].size()));
  }
  if (expanded[bind].empty()) return pp.Key("bind").Error("at least one Bind plugin must be enabled, got 0");
  out->merged_queue_sort = merged[queue_sort];

  // Score weights: the first entry of a scoring plugin in Score.Enabled ++ MultiPoint.Enabled.
  size_t score = index_of(kScoreConfigPoint);
  std::vector<PluginEntry> weights;
  std::vector<PluginEntry> scan = merged[score].enabled;
  scan.insert(scan.end(), multi.enabled.begin(), multi.enabled.end());
  for (const PluginEntry& e : scan) {
    if (!(PluginConfigPoints(e.name) & kScoreConfigPoint)) continue;
    bool seen = false;
    for (const PluginEntry& w : weights) seen = seen || w.name == e.name;
    if (!seen) weights.push_back({e.name, e.weight == 0 ? 1 : e.weight});
  }

  prof.pre_enqueue = Modelled(expanded[index_of(kPreEnqueueConfigPoint)]);
  prof.pre_filter = Modelled(expanded[index_of(kPreFilterConfigPoint)]);
  prof.filter = Modelled(expanded[index_of(kFilterConfigPoint)]);
  prof.post_filter = Modelled(expanded[index_of(kPostFilterConfigPoint)]);
  prof.pre_score = Modelled(expanded[index_of(kPreScoreConfigPoint)]);
  prof.score.clear();
  for (const std::string& name : Modelled(expanded[score])) {
    int64_t weight = 1;
    for (const PluginEntry& w : weights) {
      if (w.name == name) weight = w.weight;
    }
    prof.score.push_back({name, weight});
  }

  // pluginConfig: one entry per plugin, each defaulted field by field and validated.
  const json* configs = nullptr;
  KPLACE_RETURN_IF_ERROR(GetArray(j, "pluginConfig", p, &configs));
  std::vector<std::string> seen;
  for (size_t i = 0; configs && i < configs->size(); ++i) {
    const json& c = (*configs)[i];
    FieldPath cp = p.Key("pluginConfig").Index(i);
    KPLACE_RETURN_IF_ERROR(ExpectObject(c, cp));
    KPLACE_RETURN_IF_ERROR(CheckFields(c, cp, {"name", "args"}));
    std::string name;
    KPLACE_RETURN_IF_ERROR(GetString(c, "name", cp, &name));
    FieldPath np = cp.Key("name");
    if (name.empty()) return np.Error("required");
    auto first = std::find(seen.begin(), seen.end(), name);
    if (first != seen.end()) {
      return np.Error(StrCat("duplicate pluginConfig for plugin ", Quote(name), " (first at pluginConfig[",
                             first - seen.begin(), "])"));
    }
    seen.push_back(name);
    if (PluginIsRemoved(name)) {
      return np.Error(StrCat("plugin ", Quote(name), " was removed in v1.31 and is invalid in ", kApiVersion));
    }
    if (PluginConfigPoints(name) == 0) return np.Error(StrCat("unknown plugin ", Quote(name)));
    const json args = c.contains("args") ? c.at("args") : json();
    KPLACE_RETURN_IF_ERROR(DecodePluginArgs(name, args, cp.Key("args").str(), &prof.args));
  }
  return absl::OkStatus();
}

}  // namespace

SchedulerConfig DefaultSchedulerConfig() {
  SchedulerConfig c;
  c.profiles.push_back(DefaultProfile());
  return c;
}

absl::StatusOr<SchedulerConfig> DecodeSchedulerConfig(const nlohmann::json& doc, std::string_view file) {
  FieldPath root = FieldPath::File(file);
  KPLACE_RETURN_IF_ERROR(ExpectObject(doc, root));
  std::string api_version, kind;
  KPLACE_RETURN_IF_ERROR(GetString(doc, "apiVersion", root, &api_version));
  KPLACE_RETURN_IF_ERROR(GetString(doc, "kind", root, &kind));
  if (api_version != kApiVersion) {
    return root.Key("apiVersion").Error(StrCat("must be ", Quote(kApiVersion), ", got ", Quote(api_version)));
  }
  if (kind != kKind) return root.Key("kind").Error(StrCat("must be ", Quote(kKind), ", got ", Quote(kind)));
  KPLACE_RETURN_IF_ERROR(CheckFields(doc, root, {"apiVersion", "kind", "parallelism", "leaderElection",
                                                 "clientConnection", "enableProfiling", "enableContentionProfiling",
                                                 "percentageOfNodesToScore", "podInitialBackoffSeconds",
                                                 "podMaxBackoffSeconds", "profiles", "extenders",
                                                 "delayCacheUntilActive"}));

  SchedulerConfig cfg;
  KPLACE_RETURN_IF_ERROR(GetInt(doc, "parallelism", root, &cfg.parallelism));
  if (cfg.parallelism <= 0) {
    return root.Key("parallelism").Error(StrCat("must be greater than 0, got ", cfg.parallelism));
  }
  std::optional<int32_t> percentage;
  KPLACE_RETURN_IF_ERROR(CheckPercentage(doc, root, &percentage));
  cfg.percentage_of_nodes_to_score = percentage.value_or(0);

  // Queue settings kplace does not model, still validated as kube-scheduler does.
  int64_t initial_backoff = 1, max_backoff = 10;
  KPLACE_RETURN_IF_ERROR(GetInt(doc, "podInitialBackoffSeconds", root, &initial_backoff));
  KPLACE_RETURN_IF_ERROR(GetInt(doc, "podMaxBackoffSeconds", root, &max_backoff));
  if (initial_backoff <= 0) {
    return root.Key("podInitialBackoffSeconds").Error(StrCat("must be greater than 0, got ", initial_backoff));
  }
  if (max_backoff < initial_backoff) {
    return root.Key("podMaxBackoffSeconds")
        .Error(StrCat("must be at least podInitialBackoffSeconds (", initial_backoff, "), got ", max_backoff));
  }
  for (const char* key : {"enableProfiling", "enableContentionProfiling", "delayCacheUntilActive"}) {
    bool ignored = false;
    KPLACE_RETURN_IF_ERROR(GetBool(doc, key, root, &ignored));
  }
  for (const char* key : {"leaderElection", "clientConnection"}) {
    if (Has(doc, key)) KPLACE_RETURN_IF_ERROR(ExpectObject(doc.at(key), root.Key(key)));
  }
  const json* extenders = nullptr;
  KPLACE_RETURN_IF_ERROR(GetArray(doc, "extenders", root, &extenders));
  // Extenders are HTTP calls out of the cycle; placements would depend on them.
  if (extenders && !extenders->empty()) {
    return root.Key("extenders").Error(
        StrCat("not supported: kplace cannot call scheduler extenders, got ", extenders->size()));
  }

  const json* profiles = nullptr;
  KPLACE_RETURN_IF_ERROR(GetArray(doc, "profiles", root, &profiles));
  static const json kEmptyProfiles = json::array({json::object()});
  if (!profiles || profiles->empty()) profiles = &kEmptyProfiles;

  std::vector<DecodedProfile> decoded(profiles->size());
  for (size_t i = 0; i < profiles->size(); ++i) {
    KPLACE_RETURN_IF_ERROR(DecodeProfile((*profiles)[i], root.Key("profiles").Index(i), &decoded[i]));
  }
  // Only a lone profile with no name becomes default-scheduler.
  if (decoded.size() == 1 && !decoded[0].scheduler_name) decoded[0].scheduler_name = kDefaultSchedulerName;
  for (size_t i = 0; i < decoded.size(); ++i) {
    FieldPath np = root.Key("profiles").Index(i).Key("schedulerName");
    std::string name = decoded[i].scheduler_name.value_or("");
    if (name.empty()) return np.Error("required: every profile needs a non-empty schedulerName");
    for (size_t k = 0; k < i; ++k) {
      if (decoded[k].profile.scheduler_name == name) {
        return np.Error(StrCat("duplicate schedulerName ", Quote(name), " (first in profiles[", k, "])"));
      }
    }
    decoded[i].profile.scheduler_name = name;
    // One queue serves every profile, so all must sort it the same way.
    if (i > 0 && !(decoded[i].merged_queue_sort == decoded[0].merged_queue_sort)) {
      return root.Key("profiles").Index(i).Key("plugins").Key("queueSort").Error(
          "must be the same for all profiles (differs from profiles[0])");
    }
  }
  for (DecodedProfile& d : decoded) cfg.profiles.push_back(std::move(d.profile));
  return cfg;
}

absl::StatusOr<SchedulerConfig> LoadSchedulerConfig(const std::string& path) {
  KPLACE_ASSIGN_OR_RETURN(const std::string text, ReadInputFile(path));
  KPLACE_ASSIGN_OR_RETURN(std::vector<json> docs, ParseDocuments(text, path));
  const json* config = nullptr;
  for (const json& doc : docs) {
    // Other objects may share the file (a snapshot with its configuration).
    if (!doc.is_object() || !doc.contains("kind") || doc["kind"] != kKind) continue;
    if (config) return absl::InvalidArgumentError(StrCat(path, ": more than one ", kKind, " document"));
    config = &doc;
  }
  if (!config) return absl::InvalidArgumentError(StrCat(path, ": no ", kKind, " document"));
  return DecodeSchedulerConfig(*config, path);
}

}  // namespace kplace
