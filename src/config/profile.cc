#include "kplace/config/profile.h"

#include <algorithm>
#include <string_view>

#include "kplace/framework/types.h"

namespace kplace {
namespace {

struct PluginInfo {
  const char* name;
  unsigned points;
  int64_t default_weight;  // 0: no score
};

constexpr unsigned kPF = kPreFilterPoint, kF = kFilterPoint, kPS = kPreScorePoint, kS = kScorePoint,
                   kN = kNormalizeScorePoint;

// The v1.37 default MultiPoint order (cycle-and-config.md §4.1), with weights.
constexpr PluginInfo kDefaultPlugins[] = {
    {"NodeUnschedulable", kF, 0},
    {"NodeName", kF, 0},
    {"TaintToleration", kF | kPS | kS | kN, 3},
    {"NodeAffinity", kPF | kF | kPS | kS | kN, 2},
    {"NodePorts", kPF | kF, 0},
    {"NodeResourcesFit", kPF | kF | kPS | kS, 1},
    {"VolumeRestrictions", kPF | kF, 0},
    {"NodeVolumeLimits", kPF | kF, 0},
    {"VolumeBinding", kPF | kF | kPS | kS, 1},
    {"VolumeZone", kPF | kF, 0},
    {"PodTopologySpread", kPF | kF | kPS | kS | kN, 2},
    {"InterPodAffinity", kPF | kF | kPS | kS | kN, 2},
    // Inserted before DefaultPreemption whenever DynamicResourceAllocation is on (locked on
    // since v1.35), with no weight; its Score (>= v1.36) has no PreScore to skip it.
    {"DynamicResources", kPF | kF | kS | kN, 1},
    {"NodeResourcesBalancedAllocation", kPS | kS, 1},
    {"ImageLocality", kS, 1},
};

}  // namespace

unsigned PluginExtensionPoints(const std::string& name) {
  for (const PluginInfo& p : kDefaultPlugins) {
    if (name == p.name) return p.points;
  }
  return 0;
}

namespace {

struct RegisteredPlugin {
  const char* name;
  unsigned points;
  bool modelled;
};

constexpr unsigned kCfgPreEnqueue = kPreEnqueueConfigPoint, kCfgQueueSort = kQueueSortConfigPoint,
                   kCfgPreFilter = kPreFilterConfigPoint, kCfgFilter = kFilterConfigPoint,
                   kCfgPostFilter = kPostFilterConfigPoint, kCfgPreScore = kPreScoreConfigPoint,
                   kCfgScore = kScoreConfigPoint, kCfgReserve = kReserveConfigPoint,
                   kCfgPreBind = kPreBindConfigPoint, kCfgBind = kBindConfigPoint;

// Plugins outside the scheduling-cycle table above, with every point they implement.
constexpr RegisteredPlugin kOtherPlugins[] = {
    {"SchedulingGates", kCfgPreEnqueue, true},
    {"PrioritySort", kCfgQueueSort, true},
    // PreEnqueue is its async-preemption hook.
    {"DefaultPreemption", kCfgPostFilter | kCfgPreEnqueue, true},
    {"DefaultBinder", kCfgBind, true},
    {"NodeDeclaredFeatures", kCfgPreFilter | kCfgFilter, false},
};

unsigned ToConfigPoints(unsigned points) {
  unsigned out = 0;
  if (points & kPreFilterPoint) out |= kCfgPreFilter;
  if (points & kFilterPoint) out |= kCfgFilter;
  if (points & kPreScorePoint) out |= kCfgPreScore;
  if (points & kScorePoint) out |= kCfgScore;
  return out;
}

}  // namespace

unsigned PluginConfigPoints(const std::string& name) {
  for (const RegisteredPlugin& p : kOtherPlugins) {
    if (name == p.name) return p.points;
  }
  unsigned points = ToConfigPoints(PluginExtensionPoints(name));
  // VolumeBinding also reserves and pre-binds the claims it chose; DynamicResources also
  // waits for missing claims (PreEnqueue) and reserves claims. (Its PostFilter is not run yet.)
  if (name == "VolumeBinding") points |= kCfgReserve | kCfgPreBind;
  if (name == "DynamicResources") points |= kCfgPreEnqueue | kCfgReserve | kCfgPreBind;
  return points;
}

bool PluginIsModelled(const std::string& name) {
  for (const RegisteredPlugin& p : kOtherPlugins) {
    if (name == p.name) return p.modelled;
  }
  return PluginExtensionPoints(name) != 0;
}

bool PluginIsRemoved(const std::string& name) {
  return name == "AzureDiskLimits" || name == "CinderLimits" || name == "EBSLimits" || name == "GCEPDLimits";
}

std::vector<WeightedPlugin> DefaultMultiPointPlugins() {
  std::vector<WeightedPlugin> out = {{"SchedulingGates", 0}, {"PrioritySort", 0}};
  for (const PluginInfo& info : kDefaultPlugins) {
    // VolumeBinding and DynamicResources carry no weight in the upstream list (they score
    // with 1).
    const std::string_view name = info.name;
    int64_t weight = name == "VolumeBinding" || name == "DynamicResources" ? 0 : info.default_weight;
    out.push_back({info.name, weight});
    // DefaultPreemption sits between the filters and the score-only plugins.
    if (name == "DynamicResources") out.push_back({"DefaultPreemption", 0});
  }
  out.push_back({"DefaultBinder", 0});
  return out;
}

std::vector<std::string> Profile::AllPlugins() const {
  std::vector<std::string> out;
  auto add = [&](const std::string& n) {
    if (std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
  };
  for (const auto& n : pre_filter) add(n);
  for (const auto& n : filter) add(n);
  for (const auto& n : pre_score) add(n);
  for (const auto& w : score) add(w.name);
  return out;
}

Profile DefaultProfile() {
  Profile p;
  for (const PluginInfo& info : kDefaultPlugins) {
    if (info.points & kPreFilterPoint) p.pre_filter.push_back(info.name);
    if (info.points & kFilterPoint) p.filter.push_back(info.name);
    if (info.points & kPreScorePoint) p.pre_score.push_back(info.name);
    if (info.points & kScorePoint) p.score.push_back({info.name, info.default_weight});
  }
  // PreEnqueue and PostFilter in MultiPoint order.
  p.pre_enqueue = {"SchedulingGates", "DynamicResources", "DefaultPreemption"};
  p.post_filter = {"DefaultPreemption"};
  return p;
}

Profile SinglePluginsProfile(const std::vector<std::string>& plugins) {
  Profile p;
  for (const std::string& name : plugins) {
    unsigned points = PluginExtensionPoints(name);
    if (points & kPreFilterPoint) p.pre_filter.push_back(name);
    if (points & kFilterPoint) p.filter.push_back(name);
    if (points & kPreScorePoint) p.pre_score.push_back(name);
    if (points & kScorePoint) p.score.push_back({name, 1});
  }
  return p;
}

}  // namespace kplace
