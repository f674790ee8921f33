#include "kplace/config/config.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "kplace/config/profile.h"
#include "kplace/model/decode.h"

namespace kplace {
namespace {

using json = nlohmann::json;
using Names = std::vector<std::string>;
using Scores = std::vector<std::pair<std::string, int64_t>>;

const Names kDefaultPreFilter = {"NodeAffinity",     "NodePorts",  "NodeResourcesFit",  "VolumeRestrictions",
                                 "NodeVolumeLimits", "VolumeBinding", "VolumeZone", "PodTopologySpread",
                                 "InterPodAffinity", "DynamicResources"};
const Names kDefaultFilter = {"NodeUnschedulable", "NodeName",         "TaintToleration",    "NodeAffinity",
                              "NodePorts",         "NodeResourcesFit", "VolumeRestrictions", "NodeVolumeLimits",
                              "VolumeBinding",     "VolumeZone",       "PodTopologySpread",  "InterPodAffinity",
                              "DynamicResources"};
const Names kDefaultPreScore = {"TaintToleration",   "NodeAffinity",     "NodeResourcesFit", "VolumeBinding",
                                "PodTopologySpread", "InterPodAffinity", "NodeResourcesBalancedAllocation"};
const Scores kDefaultScore = {{"TaintToleration", 3},   {"NodeAffinity", 2},     {"NodeResourcesFit", 1},
                              {"VolumeBinding", 1},     {"PodTopologySpread", 2}, {"InterPodAffinity", 2},
                              {"DynamicResources", 1},  {"NodeResourcesBalancedAllocation", 1}, {"ImageLocality", 1}};
const Names kDefaultPostFilter = {"DefaultPreemption"};
const Names kDefaultPreEnqueue = {"SchedulingGates", "DynamicResources", "DefaultPreemption"};

Scores ScoresOf(const Profile& p) {
  Scores out;
  for (const WeightedPlugin& w : p.score) out.emplace_back(w.name, w.weight);
  return out;
}

// A KubeSchedulerConfiguration with the given extra top-level fields (JSON object text).
json Config(const std::string& fields = "{}") {
  json doc = json::parse(fields);
  doc["apiVersion"] = "kubescheduler.config.k8s.io/v1";
  doc["kind"] = "KubeSchedulerConfiguration";
  return doc;
}

// One profile with the given `plugins` object text.
json WithPlugins(const std::string& plugins) {
  return Config(R"({"profiles": [{"plugins": )" + plugins + "}]}");
}

Profile DecodeOne(const json& doc) {
  absl::StatusOr<SchedulerConfig> cfg = DecodeSchedulerConfig(doc, "sched.yaml");
  EXPECT_TRUE(cfg.ok()) << cfg.status();
  if (!cfg.ok() || cfg->profiles.size() != 1) {
    ADD_FAILURE() << "expected one profile";
    return Profile{};
  }
  return cfg->profiles[0];
}

void ExpectDefaultLists(const Profile& p) {
  EXPECT_EQ(p.pre_filter, kDefaultPreFilter);
  EXPECT_EQ(p.filter, kDefaultFilter);
  EXPECT_EQ(p.pre_enqueue, kDefaultPreEnqueue);
  EXPECT_EQ(p.post_filter, kDefaultPostFilter);
  EXPECT_EQ(p.pre_score, kDefaultPreScore);
  EXPECT_EQ(ScoresOf(p), kDefaultScore);
}

// ---------------------------------------------------------------------------------------
// Defaults

TEST(SchedulerConfigTest, DefaultSchedulerConfigIsTheV137DefaultProfile) {
  SchedulerConfig cfg = DefaultSchedulerConfig();
  EXPECT_EQ(cfg.parallelism, 16);
  EXPECT_EQ(cfg.percentage_of_nodes_to_score, 0);
  ASSERT_EQ(cfg.profiles.size(), 1u);
  EXPECT_EQ(cfg.profiles[0].scheduler_name, "default-scheduler");
  EXPECT_FALSE(cfg.profiles[0].percentage_of_nodes_to_score.has_value());
  ExpectDefaultLists(cfg.profiles[0]);
}

TEST(SchedulerConfigTest, MinimalDocumentDecodesToTheDefaults) {
  for (const char* fields : {"{}", R"({"profiles": []})", R"({"profiles": null})", R"({"profiles": [{}]})"}) {
    SCOPED_TRACE(fields);
    absl::StatusOr<SchedulerConfig> cfg = DecodeSchedulerConfig(Config(fields), "sched.yaml");
    ASSERT_TRUE(cfg.ok()) << cfg.status();
    EXPECT_EQ(cfg->parallelism, 16);
    EXPECT_EQ(cfg->percentage_of_nodes_to_score, 0);
    ASSERT_EQ(cfg->profiles.size(), 1u);
    const Profile& p = cfg->profiles[0];
    EXPECT_EQ(p.scheduler_name, "default-scheduler");
    EXPECT_FALSE(p.percentage_of_nodes_to_score.has_value());
    ExpectDefaultLists(p);
    // The decoded default profile is exactly DefaultProfile().
    Profile d = DefaultProfile();
    EXPECT_EQ(p.pre_filter, d.pre_filter);
    EXPECT_EQ(p.filter, d.filter);
    EXPECT_EQ(p.pre_score, d.pre_score);
    EXPECT_EQ(p.post_filter, d.post_filter);
    EXPECT_EQ(p.pre_enqueue, d.pre_enqueue);
    EXPECT_EQ(ScoresOf(p), ScoresOf(d));
    EXPECT_EQ(p.args.node_resources_fit.strategy, "LeastAllocated");
    EXPECT_EQ(p.args.inter_pod_affinity.hard_pod_affinity_weight, 1);
  }
}

TEST(SchedulerConfigTest, DefaultMultiPointListOrder) {
  std::vector<std::pair<std::string, int64_t>> got;
  for (const WeightedPlugin& w : DefaultMultiPointPlugins()) got.emplace_back(w.name, w.weight);
  Scores want = {{"SchedulingGates", 0},   {"PrioritySort", 0},      {"NodeUnschedulable", 0},
                 {"NodeName", 0},          {"TaintToleration", 3},   {"NodeAffinity", 2},
                 {"NodePorts", 0},         {"NodeResourcesFit", 1},  {"VolumeRestrictions", 0},
                 {"NodeVolumeLimits", 0},  {"VolumeBinding", 0},     {"VolumeZone", 0},
                 {"PodTopologySpread", 2}, {"InterPodAffinity", 2},  {"DynamicResources", 0},
                 {"DefaultPreemption", 0},
                 {"NodeResourcesBalancedAllocation", 1}, {"ImageLocality", 1}, {"DefaultBinder", 0}};
  EXPECT_EQ(got, want);
}

TEST(SchedulerConfigTest, PluginConfigPointsCoverEveryRegisteredPlugin) {
  EXPECT_EQ(PluginConfigPoints("PrioritySort"), unsigned{kQueueSortConfigPoint});
  EXPECT_EQ(PluginConfigPoints("DefaultBinder"), unsigned{kBindConfigPoint});
  EXPECT_EQ(PluginConfigPoints("SchedulingGates"), unsigned{kPreEnqueueConfigPoint});
  EXPECT_TRUE(PluginConfigPoints("DefaultPreemption") & kPostFilterConfigPoint);
  EXPECT_EQ(PluginConfigPoints("ImageLocality"), unsigned{kScoreConfigPoint});
  EXPECT_EQ(PluginConfigPoints("VolumeBinding"), unsigned{kPreFilterConfigPoint | kFilterConfigPoint |
                                                          kPreScoreConfigPoint | kScoreConfigPoint |
                                                          kReserveConfigPoint | kPreBindConfigPoint});
  EXPECT_EQ(PluginConfigPoints("TaintToleration"),
            unsigned{kFilterConfigPoint | kPreScoreConfigPoint | kScoreConfigPoint});
  EXPECT_EQ(PluginConfigPoints("NoSuchPlugin"), 0u);
  EXPECT_EQ(PluginConfigPoints("EBSLimits"), 0u);
  EXPECT_TRUE(PluginIsRemoved("EBSLimits"));
  EXPECT_TRUE(PluginIsRemoved("GCEPDLimits"));
  EXPECT_TRUE(PluginIsRemoved("AzureDiskLimits"));
  EXPECT_TRUE(PluginIsRemoved("CinderLimits"));
  EXPECT_FALSE(PluginIsRemoved("NodeVolumeLimits"));
  EXPECT_EQ(PluginConfigPoints("DynamicResources"),
            unsigned{kPreEnqueueConfigPoint | kPreFilterConfigPoint | kFilterConfigPoint | kScoreConfigPoint |
                     kReserveConfigPoint | kPreBindConfigPoint});
  EXPECT_TRUE(PluginIsModelled("DynamicResources"));
  EXPECT_FALSE(PluginIsModelled("NodeDeclaredFeatures"));
  EXPECT_TRUE(PluginIsModelled("DefaultBinder"));
  EXPECT_TRUE(PluginIsModelled("NodeResourcesFit"));
  // The scheduling-cycle view is unchanged.
  EXPECT_EQ(PluginExtensionPoints("PrioritySort"), 0u);
}

TEST(SchedulerConfigTest, TopLevelAndProfileSettings) {
  absl::StatusOr<SchedulerConfig> cfg = DecodeSchedulerConfig(
      Config(R"({"parallelism": 8, "percentageOfNodesToScore": 50, "podInitialBackoffSeconds": 2,
                 "podMaxBackoffSeconds": 2, "enableProfiling": false,
                 "leaderElection": {"leaderElect": false}, "clientConnection": {"qps": 100},
                 "profiles": [{"schedulerName": "a", "percentageOfNodesToScore": 30},
                              {"schedulerName": "b"}]})"),
      "sched.yaml");
  ASSERT_TRUE(cfg.ok()) << cfg.status();
  EXPECT_EQ(cfg->parallelism, 8);
  EXPECT_EQ(cfg->percentage_of_nodes_to_score, 50);
  ASSERT_EQ(cfg->profiles.size(), 2u);
  EXPECT_EQ(cfg->profiles[0].scheduler_name, "a");
  EXPECT_EQ(cfg->profiles[0].percentage_of_nodes_to_score, std::optional<int32_t>(30));
  EXPECT_EQ(cfg->profiles[1].scheduler_name, "b");
  EXPECT_FALSE(cfg->profiles[1].percentage_of_nodes_to_score.has_value());
  ExpectDefaultLists(cfg->profiles[0]);
  ExpectDefaultLists(cfg->profiles[1]);
}

TEST(SchedulerConfigTest, PercentageBoundsAreInclusive) {
  for (int pct : {0, 100}) {
    absl::StatusOr<SchedulerConfig> cfg = DecodeSchedulerConfig(
        Config(R"({"percentageOfNodesToScore": )" + std::to_string(pct) +
               R"(, "profiles": [{"percentageOfNodesToScore": )" + std::to_string(pct) + "}]}"),
        "s");
    ASSERT_TRUE(cfg.ok()) << cfg.status();
    EXPECT_EQ(cfg->percentage_of_nodes_to_score, pct);
    EXPECT_EQ(cfg->profiles[0].percentage_of_nodes_to_score, std::optional<int32_t>(pct));
  }
}

// ---------------------------------------------------------------------------------------
// Merge rules

TEST(SchedulerConfigTest, ScoreEnabledWithWeightGoesFirstAndKeepsItsWeight) {
  // cycle-and-config.md §4.2 example.
  Profile p = DecodeOne(WithPlugins(R"({"score": {"enabled": [{"name": "ImageLocality", "weight": 5}]}})"));
  Scores want = {{"ImageLocality", 5},     {"TaintToleration", 3},  {"NodeAffinity", 2},
                 {"NodeResourcesFit", 1},  {"VolumeBinding", 1},    {"PodTopologySpread", 2},
                 {"InterPodAffinity", 2},  {"DynamicResources", 1},  {"NodeResourcesBalancedAllocation", 1}};
  EXPECT_EQ(ScoresOf(p), want);
  EXPECT_EQ(p.filter, kDefaultFilter);
  EXPECT_EQ(p.pre_score, kDefaultPreScore);
}

TEST(SchedulerConfigTest, MultiPointReEnableWithWeightKeepsPosition) {
  Profile p = DecodeOne(WithPlugins(R"({"multiPoint": {"enabled": [{"name": "NodeAffinity", "weight": 7}]}})"));
  Scores want = kDefaultScore;
  want[1] = {"NodeAffinity", 7};
  EXPECT_EQ(ScoresOf(p), want);
  EXPECT_EQ(p.filter, kDefaultFilter);
  EXPECT_EQ(p.pre_filter, kDefaultPreFilter);
}

TEST(SchedulerConfigTest, MultiPointReEnableWithoutWeightResetsItToOne) {
  // The user's entry replaces the default one, weight included.
  Profile p = DecodeOne(WithPlugins(R"({"multiPoint": {"enabled": [{"name": "TaintToleration"}]}})"));
  Scores want = kDefaultScore;
  want[0] = {"TaintToleration", 1};
  EXPECT_EQ(ScoresOf(p), want);
}

TEST(SchedulerConfigTest, DisableAndReEnableInMultiPointAppendsAtTheEnd) {
  Profile p = DecodeOne(WithPlugins(
      R"({"multiPoint": {"disabled": [{"name": "NodeAffinity"}], "enabled": [{"name": "NodeAffinity", "weight": 4}]}})"));
  Names filter = {"NodeUnschedulable", "NodeName",         "TaintToleration",    "NodePorts",
                  "NodeResourcesFit",  "VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding",
                  "VolumeZone",        "PodTopologySpread", "InterPodAffinity",  "DynamicResources", "NodeAffinity"};
  EXPECT_EQ(p.filter, filter);
  Names pre_filter = {"NodePorts",        "NodeResourcesFit", "VolumeRestrictions", "NodeVolumeLimits",
                      "VolumeBinding",    "VolumeZone",       "PodTopologySpread",  "InterPodAffinity",
                      "DynamicResources", "NodeAffinity"};
  EXPECT_EQ(p.pre_filter, pre_filter);
  Scores score = {{"TaintToleration", 3},   {"NodeResourcesFit", 1}, {"VolumeBinding", 1},
                  {"PodTopologySpread", 2}, {"InterPodAffinity", 2}, {"DynamicResources", 1},
                  {"NodeResourcesBalancedAllocation", 1}, {"ImageLocality", 1}, {"NodeAffinity", 4}};
  EXPECT_EQ(ScoresOf(p), score);
}

TEST(SchedulerConfigTest, DisablingAllAtOnePointMakesTheUserListTheWholeOrder) {
  Profile p = DecodeOne(WithPlugins(R"({"score": {"disabled": [{"name": "*"}],
      "enabled": [{"name": "ImageLocality", "weight": 2}, {"name": "NodeResourcesFit", "weight": 3}]}})"));
  EXPECT_EQ(ScoresOf(p), (Scores{{"ImageLocality", 2}, {"NodeResourcesFit", 3}}));
  // Other points keep the MultiPoint defaults.
  EXPECT_EQ(p.pre_score, kDefaultPreScore);
  EXPECT_EQ(p.filter, kDefaultFilter);
}

TEST(SchedulerConfigTest, DisablingAllAtOnePointWithNothingEnabledEmptiesIt) {
  Profile p = DecodeOne(WithPlugins(R"({"preScore": {"disabled": [{"name": "*"}]},
                                        "postFilter": {"disabled": [{"name": "*"}]}})"));
  EXPECT_TRUE(p.pre_score.empty());
  EXPECT_TRUE(p.post_filter.empty());
  EXPECT_EQ(ScoresOf(p), kDefaultScore);
}

TEST(SchedulerConfigTest, DisablingAllInMultiPointKeepsOnlyTheUserPlugins) {
  Profile p = DecodeOne(WithPlugins(R"({"multiPoint": {"disabled": [{"name": "*"}],
      "enabled": [{"name": "PrioritySort"}, {"name": "DefaultBinder"}, {"name": "NodeResourcesFit"},
                  {"name": "ImageLocality", "weight": 4}]}})"));
  EXPECT_EQ(p.pre_filter, Names{"NodeResourcesFit"});
  EXPECT_EQ(p.filter, Names{"NodeResourcesFit"});
  EXPECT_EQ(p.pre_score, Names{"NodeResourcesFit"});
  EXPECT_TRUE(p.post_filter.empty());
  EXPECT_EQ(ScoresOf(p), (Scores{{"NodeResourcesFit", 1}, {"ImageLocality", 4}}));
}

TEST(SchedulerConfigTest, DisablingOnePluginAtOnePointLeavesTheOthers) {
  Profile p = DecodeOne(WithPlugins(R"({"filter": {"disabled": [{"name": "NodePorts"}]},
                                        "score": {"disabled": [{"name": "ImageLocality"}, {"name": "TaintToleration"}]}})"));
  Names filter = kDefaultFilter;
  filter.erase(filter.begin() + 4);
  EXPECT_EQ(p.filter, filter);
  EXPECT_EQ(p.pre_filter, kDefaultPreFilter);  // NodePorts still pre-filters
  Scores score = {{"NodeAffinity", 2},      {"NodeResourcesFit", 1}, {"VolumeBinding", 1},
                  {"PodTopologySpread", 2}, {"InterPodAffinity", 2}, {"DynamicResources", 1},
                  {"NodeResourcesBalancedAllocation", 1}};
  EXPECT_EQ(ScoresOf(p), score);
  EXPECT_EQ(p.pre_score, kDefaultPreScore);
}

TEST(SchedulerConfigTest, DisabledAndEnabledAtOnePointRunsAfterTheMultiPointPlugins) {
  // Disabled at Score, ImageLocality is no override there, so its own entry comes last.
  Profile p = DecodeOne(WithPlugins(R"({"score": {"disabled": [{"name": "ImageLocality"}],
                                                  "enabled": [{"name": "ImageLocality", "weight": 5}]}})"));
  Scores want = kDefaultScore;
  want.back() = {"ImageLocality", 5};
  EXPECT_EQ(ScoresOf(p), want);
}

TEST(SchedulerConfigTest, SpecificPointOverridesRunBeforeMultiPointInTheirOwnOrder) {
  Profile p = DecodeOne(WithPlugins(R"({"filter": {"enabled": [{"name": "InterPodAffinity"}, {"name": "NodePorts"}]}})"));
  Names filter = {"InterPodAffinity", "NodePorts",        "NodeUnschedulable",  "NodeName",
                  "TaintToleration",  "NodeAffinity",     "NodeResourcesFit",   "VolumeRestrictions",
                  "NodeVolumeLimits", "VolumeBinding",    "VolumeZone",         "PodTopologySpread",
                  "DynamicResources"};
  EXPECT_EQ(p.filter, filter);
  EXPECT_EQ(p.pre_filter, kDefaultPreFilter);
}

TEST(SchedulerConfigTest, MultiPointPluginDisabledAtOnePointOnlyThere) {
  Profile p = DecodeOne(WithPlugins(R"({"multiPoint": {"enabled": [{"name": "ImageLocality", "weight": 9}]},
                                        "score": {"disabled": [{"name": "NodeAffinity"}]}})"));
  Scores score = {{"TaintToleration", 3},   {"NodeResourcesFit", 1}, {"VolumeBinding", 1},
                  {"PodTopologySpread", 2}, {"InterPodAffinity", 2}, {"DynamicResources", 1},
                  {"NodeResourcesBalancedAllocation", 1}, {"ImageLocality", 9}};
  EXPECT_EQ(ScoresOf(p), score);
  EXPECT_EQ(p.pre_score, kDefaultPreScore);  // NodeAffinity still pre-scores
}

TEST(SchedulerConfigTest, ScoreWeightComesFromTheFirstEntrySeen) {
  struct Case {
    const char* plugins;
    int64_t taint_weight;
  };
  const Case cases[] = {
      // Score.Enabled is scanned before MultiPoint: an unset weight there means 1.
      {R"({"score": {"enabled": [{"name": "TaintToleration"}]}})", 1},
      {R"({"score": {"enabled": [{"name": "TaintToleration", "weight": 0}]}})", 1},
      {R"({"score": {"enabled": [{"name": "TaintToleration", "weight": 10}]},
           "multiPoint": {"enabled": [{"name": "TaintToleration", "weight": 4}]}})", 10},
      {R"({"multiPoint": {"enabled": [{"name": "TaintToleration", "weight": 4}]}})", 4},
      {R"({"multiPoint": {"enabled": [{"name": "TaintToleration", "weight": 0}]}})", 1},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.plugins);
    Profile p = DecodeOne(WithPlugins(c.plugins));
    ASSERT_FALSE(p.score.empty());
    bool found = false;
    for (const WeightedPlugin& w : p.score) {
      if (w.name == "TaintToleration") {
        EXPECT_EQ(w.weight, c.taint_weight);
        found = true;
      }
    }
    EXPECT_TRUE(found);
  }
}

TEST(SchedulerConfigTest, WeightsOnNonScorePointsAreIgnored) {
  // A weight on a Filter entry does not leak into Score.
  Profile p = DecodeOne(WithPlugins(R"({"filter": {"enabled": [{"name": "TaintToleration", "weight": 50}]}})"));
  EXPECT_EQ(ScoresOf(p), kDefaultScore);
  EXPECT_EQ(p.filter.front(), "TaintToleration");
}

TEST(SchedulerConfigTest, SpecificPointPluginWithoutMultiPointDefault) {
  // After disabling everything, a plugin named only at Filter runs only there.
  Profile p = DecodeOne(WithPlugins(R"({"filter": {"disabled": [{"name": "*"}], "enabled": [{"name": "NodeName"}]}})"));
  EXPECT_EQ(p.filter, Names{"NodeName"});
  EXPECT_EQ(p.pre_filter, kDefaultPreFilter);
}

TEST(SchedulerConfigTest, UnmodelledRegisteredPluginsAreAcceptedButNotRun) {
  Profile p = DecodeOne(WithPlugins(R"({"multiPoint": {"enabled": [{"name": "NodeDeclaredFeatures"}]},
                                        "filter": {"enabled": [{"name": "NodeDeclaredFeatures"}]}})"));
  ExpectDefaultLists(p);
}

// DynamicResources sits where upstream's applyFeatureGates puts it; re-enabling it at
// MultiPoint keeps that place, and it can be turned off like any other plugin.
TEST(SchedulerConfigTest, DynamicResourcesRunsBeforeDefaultPreemption) {
  ExpectDefaultLists(DecodeOne(WithPlugins(R"({"multiPoint": {"enabled": [{"name": "DynamicResources"}]}})")));
  Profile off = DecodeOne(WithPlugins(R"({"multiPoint": {"disabled": [{"name": "DynamicResources"}]}})"));
  EXPECT_EQ(off.pre_enqueue, (Names{"SchedulingGates", "DefaultPreemption"}));
  EXPECT_EQ(off.post_filter, Names{"DefaultPreemption"});
  EXPECT_EQ(off.pre_filter, Names(kDefaultPreFilter.begin(), kDefaultPreFilter.end() - 1));
}

TEST(SchedulerConfigTest, DisablingAnUnknownPluginIsANoOp) {
  Profile p = DecodeOne(WithPlugins(R"({"score": {"disabled": [{"name": "NotAPlugin"}]}})"));
  ExpectDefaultLists(p);
}

TEST(SchedulerConfigTest, ProfilesMergeIndependentlyAndKeepTheirArgs) {
  absl::StatusOr<SchedulerConfig> cfg = DecodeSchedulerConfig(Config(R"({"profiles": [
      {"schedulerName": "default-scheduler"},
      {"schedulerName": "bin-packing",
       "plugins": {"score": {"disabled": [{"name": "NodeResourcesBalancedAllocation"}],
                             "enabled": [{"name": "NodeResourcesFit", "weight": 5}]}},
       "pluginConfig": [{"name": "NodeResourcesFit",
                         "args": {"scoringStrategy": {"type": "MostAllocated",
                                                      "resources": [{"name": "cpu", "weight": 2},
                                                                    {"name": "memory"}]}}},
                        {"name": "InterPodAffinity", "args": {"hardPodAffinityWeight": 0}}]}]})"),
                                                               "sched.yaml");
  ASSERT_TRUE(cfg.ok()) << cfg.status();
  ASSERT_EQ(cfg->profiles.size(), 2u);
  ExpectDefaultLists(cfg->profiles[0]);
  EXPECT_EQ(cfg->profiles[0].args.node_resources_fit.strategy, "LeastAllocated");
  EXPECT_EQ(cfg->profiles[0].args.inter_pod_affinity.hard_pod_affinity_weight, 1);
  const Profile& b = cfg->profiles[1];
  EXPECT_EQ(b.scheduler_name, "bin-packing");
  Scores score = {{"NodeResourcesFit", 5},  {"TaintToleration", 3},  {"NodeAffinity", 2}, {"VolumeBinding", 1},
                  {"PodTopologySpread", 2}, {"InterPodAffinity", 2}, {"DynamicResources", 1}, {"ImageLocality", 1}};
  EXPECT_EQ(ScoresOf(b), score);
  EXPECT_EQ(b.args.node_resources_fit.strategy, "MostAllocated");
  ASSERT_EQ(b.args.node_resources_fit.resources.size(), 2u);
  EXPECT_EQ(b.args.node_resources_fit.resources[0].name, "cpu");
  EXPECT_EQ(b.args.node_resources_fit.resources[0].weight, 2);
  EXPECT_EQ(b.args.node_resources_fit.resources[1].name, "memory");
  EXPECT_EQ(b.args.node_resources_fit.resources[1].weight, 1);
  EXPECT_EQ(b.args.inter_pod_affinity.hard_pod_affinity_weight, 0);
}

TEST(SchedulerConfigTest, SameQueueSortInEveryProfileIsAccepted) {
  absl::StatusOr<SchedulerConfig> cfg = DecodeSchedulerConfig(Config(R"({"profiles": [
      {"schedulerName": "a", "plugins": {"queueSort": {"enabled": [{"name": "PrioritySort"}]}}},
      {"schedulerName": "b", "plugins": {"queueSort": {"enabled": [{"name": "PrioritySort"}]}}}]})"),
                                                               "sched.yaml");
  ASSERT_TRUE(cfg.ok()) << cfg.status();
  EXPECT_EQ(cfg->profiles.size(), 2u);
}

// ---------------------------------------------------------------------------------------
// YAML and JSON input

constexpr char kYaml[] = R"(apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
parallelism: 4
percentageOfNodesToScore: 70
profiles:
  - schedulerName: yaml-scheduler
    plugins:
      score:
        disabled:
          - name: "*"
        enabled:
          - name: NodeResourcesFit
            weight: 3
          - name: ImageLocality
    pluginConfig:
      - name: NodeResourcesFit
        args:
          apiVersion: kubescheduler.config.k8s.io/v1
          kind: NodeResourcesFitArgs
          scoringStrategy:
            type: RequestedToCapacityRatio
            resources:
              - name: cpu
                weight: 2
            requestedToCapacityRatio:
              shape:
                - utilization: 0
                  score: 0
                - utilization: 100
                  score: 10
      - name: PodTopologySpread
        args:
          defaultingType: List
          defaultConstraints:
            - maxSkew: 1
              topologyKey: topology.kubernetes.io/zone
              whenUnsatisfiable: ScheduleAnyway
)";

void ExpectYamlConfig(const SchedulerConfig& cfg) {
  EXPECT_EQ(cfg.parallelism, 4);
  EXPECT_EQ(cfg.percentage_of_nodes_to_score, 70);
  ASSERT_EQ(cfg.profiles.size(), 1u);
  const Profile& p = cfg.profiles[0];
  EXPECT_EQ(p.scheduler_name, "yaml-scheduler");
  EXPECT_EQ(ScoresOf(p), (Scores{{"NodeResourcesFit", 3}, {"ImageLocality", 1}}));
  const NodeResourcesFitArgs& fit = p.args.node_resources_fit;
  EXPECT_EQ(fit.strategy, "RequestedToCapacityRatio");
  ASSERT_EQ(fit.resources.size(), 1u);
  EXPECT_EQ(fit.resources[0].name, "cpu");
  EXPECT_EQ(fit.resources[0].weight, 2);
  ASSERT_EQ(fit.shape.size(), 2u);
  EXPECT_EQ(fit.shape[1].utilization, 100);
  EXPECT_EQ(fit.shape[1].score, 10);
  const PodTopologySpreadArgs& pts = p.args.pod_topology_spread;
  EXPECT_EQ(pts.defaulting_type, "List");
  ASSERT_EQ(pts.default_constraints.size(), 1u);
  EXPECT_EQ(pts.default_constraints[0].max_skew, 1);
  EXPECT_EQ(pts.default_constraints[0].topology_key, "topology.kubernetes.io/zone");
  EXPECT_EQ(pts.default_constraints[0].when_unsatisfiable, "ScheduleAnyway");
}

std::string WriteTemp(const std::string& name, const std::string& text) {
  std::filesystem::path path = std::filesystem::temp_directory_path() /
                               ("kplace_config_test_" + std::to_string(::getpid()) + "_" + name);
  std::ofstream(path) << text;
  return path.string();
}

TEST(SchedulerConfigTest, DecodesYamlDocuments) {
  absl::StatusOr<std::vector<json>> docs = ParseDocuments(kYaml, "sched.yaml");
  ASSERT_TRUE(docs.ok()) << docs.status();
  ASSERT_EQ(docs->size(), 1u);
  absl::StatusOr<SchedulerConfig> cfg = DecodeSchedulerConfig((*docs)[0], "sched.yaml");
  ASSERT_TRUE(cfg.ok()) << cfg.status();
  ExpectYamlConfig(*cfg);
}

TEST(SchedulerConfigTest, LoadsYamlAndJsonFiles) {
  std::string yaml_path = WriteTemp("sched.yaml", kYaml);
  absl::StatusOr<SchedulerConfig> from_yaml = LoadSchedulerConfig(yaml_path);
  ASSERT_TRUE(from_yaml.ok()) << from_yaml.status();
  ExpectYamlConfig(*from_yaml);

  absl::StatusOr<std::vector<json>> docs = ParseDocuments(kYaml, "sched.yaml");
  ASSERT_TRUE(docs.ok());
  std::string json_path = WriteTemp("sched.json", (*docs)[0].dump(2));
  absl::StatusOr<SchedulerConfig> from_json = LoadSchedulerConfig(json_path);
  ASSERT_TRUE(from_json.ok()) << from_json.status();
  ExpectYamlConfig(*from_json);

  // A configuration may share a multi-document file with other objects.
  std::string mixed_path = WriteTemp("mixed.yaml", std::string("apiVersion: v1\nkind: Node\nmetadata:\n  name: n1\n---\n") + kYaml);
  absl::StatusOr<SchedulerConfig> mixed = LoadSchedulerConfig(mixed_path);
  ASSERT_TRUE(mixed.ok()) << mixed.status();
  ExpectYamlConfig(*mixed);

  std::string bad_path = WriteTemp("bad.yaml", "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nparallelism: 0\n");
  absl::StatusOr<SchedulerConfig> bad = LoadSchedulerConfig(bad_path);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(), bad_path + ": parallelism: must be greater than 0, got 0");

  std::string none_path = WriteTemp("none.yaml", "apiVersion: v1\nkind: Node\nmetadata:\n  name: n1\n");
  absl::StatusOr<SchedulerConfig> none = LoadSchedulerConfig(none_path);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("no KubeSchedulerConfiguration document"), std::string::npos);

  std::string two_path = WriteTemp("two.yaml", std::string(kYaml) + "---\n" + kYaml);
  absl::StatusOr<SchedulerConfig> two = LoadSchedulerConfig(two_path);
  ASSERT_FALSE(two.ok());
  EXPECT_NE(two.status().message().find("more than one KubeSchedulerConfiguration"), std::string::npos);

  absl::StatusOr<SchedulerConfig> missing = LoadSchedulerConfig("/nonexistent/kplace/sched.yaml");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);

  for (const std::string& p : {yaml_path, json_path, mixed_path, bad_path, none_path, two_path}) std::remove(p.c_str());
}

// ---------------------------------------------------------------------------------------
// Validation

struct RejectCase {
  const char* name;
  std::string doc;    // a whole configuration document (JSON)
  std::string error;  // expected message, exactly
};

std::string Doc(const std::string& fields) { return Config(fields).dump(); }
std::string Plugins(const std::string& plugins) { return WithPlugins(plugins).dump(); }

TEST(SchedulerConfigTest, RejectsInvalidConfigurationsNamingTheField) {
  const RejectCase cases[] = {
      {"not an object", "[]", "sched.yaml: expected an object, got array"},
      {"api version", R"({"apiVersion": "kubescheduler.config.k8s.io/v1beta3", "kind": "KubeSchedulerConfiguration"})",
       R"(sched.yaml: apiVersion: must be "kubescheduler.config.k8s.io/v1", got "kubescheduler.config.k8s.io/v1beta3")"},
      {"missing api version", R"({"kind": "KubeSchedulerConfiguration"})",
       R"(sched.yaml: apiVersion: must be "kubescheduler.config.k8s.io/v1", got "")"},
      {"kind", R"({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "Pod"})",
       R"(sched.yaml: kind: must be "KubeSchedulerConfiguration", got "Pod")"},
      {"unknown top-level field", Doc(R"({"healthzBindAddress": "0.0.0.0"})"),
       "sched.yaml: healthzBindAddress: unknown field"},
      {"parallelism zero", Doc(R"({"parallelism": 0})"), "sched.yaml: parallelism: must be greater than 0, got 0"},
      {"parallelism negative", Doc(R"({"parallelism": -3})"), "sched.yaml: parallelism: must be greater than 0, got -3"},
      {"parallelism string", Doc(R"({"parallelism": "8"})"), R"(sched.yaml: parallelism: expected an integer, got "8")"},
      {"parallelism too big", Doc(R"({"parallelism": 3000000000})"),
       "sched.yaml: parallelism: integer out of range, got 3000000000"},
      {"percentage over", Doc(R"({"percentageOfNodesToScore": 101})"),
       "sched.yaml: percentageOfNodesToScore: must be in [0, 100], got 101"},
      {"percentage under", Doc(R"({"percentageOfNodesToScore": -1})"),
       "sched.yaml: percentageOfNodesToScore: must be in [0, 100], got -1"},
      {"profile percentage", Doc(R"({"profiles": [{"percentageOfNodesToScore": 150}]})"),
       "sched.yaml: profiles[0].percentageOfNodesToScore: must be in [0, 100], got 150"},
      {"initial backoff", Doc(R"({"podInitialBackoffSeconds": 0})"),
       "sched.yaml: podInitialBackoffSeconds: must be greater than 0, got 0"},
      {"max backoff", Doc(R"({"podInitialBackoffSeconds": 5, "podMaxBackoffSeconds": 4})"),
       "sched.yaml: podMaxBackoffSeconds: must be at least podInitialBackoffSeconds (5), got 4"},
      {"extenders", Doc(R"({"extenders": [{"urlPrefix": "http://x"}]})"),
       "sched.yaml: extenders: not supported: kplace cannot call scheduler extenders, got 1"},
      {"profiles not a list", Doc(R"({"profiles": {}})"), "sched.yaml: profiles: expected a list, got object"},
      {"two unnamed profiles", Doc(R"({"profiles": [{}, {}]})"),
       "sched.yaml: profiles[0].schedulerName: required: every profile needs a non-empty schedulerName"},
      {"second unnamed", Doc(R"({"profiles": [{"schedulerName": "a"}, {}]})"),
       "sched.yaml: profiles[1].schedulerName: required: every profile needs a non-empty schedulerName"},
      {"explicit empty name", Doc(R"({"profiles": [{"schedulerName": ""}]})"),
       "sched.yaml: profiles[0].schedulerName: required: every profile needs a non-empty schedulerName"},
      {"duplicate names", Doc(R"({"profiles": [{"schedulerName": "a"}, {"schedulerName": "b"}, {"schedulerName": "a"}]})"),
       R"(sched.yaml: profiles[2].schedulerName: duplicate schedulerName "a" (first in profiles[0]))"},
      {"unknown profile field", Doc(R"({"profiles": [{"name": "x"}]})"), "sched.yaml: profiles[0].name: unknown field"},
      {"unknown point", Plugins(R"({"normalizeScore": {}})"), "sched.yaml: profiles[0].plugins.normalizeScore: unknown field"},
      {"unknown plugin", Plugins(R"({"score": {"enabled": [{"name": "Foo"}]}})"),
       R"(sched.yaml: profiles[0].plugins.score.enabled[0].name: unknown plugin "Foo")"},
      {"unknown plugin multipoint", Plugins(R"({"multiPoint": {"enabled": [{"name": "NodeResourcesLeastAllocated"}]}})"),
       R"(sched.yaml: profiles[0].plugins.multiPoint.enabled[0].name: unknown plugin "NodeResourcesLeastAllocated")"},
      {"missing plugin name", Plugins(R"({"filter": {"enabled": [{"weight": 1}]}})"),
       "sched.yaml: profiles[0].plugins.filter.enabled[0].name: required"},
      {"point not implemented", Plugins(R"({"filter": {"enabled": [{"name": "ImageLocality"}]}})"),
       R"(sched.yaml: profiles[0].plugins.filter.enabled[0].name: plugin "ImageLocality" does not implement Filter)"},
      {"queue sort not implemented", Plugins(R"({"queueSort": {"enabled": [{"name": "NodeName"}]}})"),
       R"(sched.yaml: profiles[0].plugins.queueSort.enabled[0].name: plugin "NodeName" does not implement QueueSort)"},
      {"score not implemented", Plugins(R"({"score": {"enabled": [{"name": "NodePorts", "weight": 2}]}})"),
       R"(sched.yaml: profiles[0].plugins.score.enabled[0].name: plugin "NodePorts" does not implement Score)"},
      {"duplicate at a point", Plugins(R"({"filter": {"enabled": [{"name": "NodePorts"}, {"name": "NodeName"}, {"name": "NodePorts"}]}})"),
       R"(sched.yaml: profiles[0].plugins.filter.enabled[2]: plugin "NodePorts" is enabled more than once at Filter)"},
      {"duplicate in multipoint", Plugins(R"({"multiPoint": {"enabled": [{"name": "ImageLocality"}, {"name": "ImageLocality"}]}})"),
       R"(sched.yaml: profiles[0].plugins.multiPoint: plugin "ImageLocality" is enabled more than once (expanding to Score))"},
      {"negative weight", Plugins(R"({"score": {"enabled": [{"name": "ImageLocality", "weight": -2}]}})"),
       "sched.yaml: profiles[0].plugins.score.enabled[0].weight: must not be negative, got -2"},
      {"negative multipoint weight", Plugins(R"({"multiPoint": {"enabled": [{"name": "NodeAffinity", "weight": -1}]}})"),
       "sched.yaml: profiles[0].plugins.multiPoint.enabled[0].weight: must not be negative, got -1"},
      {"weight huge float", Plugins(R"({"score": {"enabled": [{"name": "ImageLocality", "weight": 1e30}]}})"),
       "sched.yaml: profiles[0].plugins.score.enabled[0].weight: expected an integer, got 1e+30"},
      {"weight integral float", Plugins(R"({"score": {"enabled": [{"name": "ImageLocality", "weight": -4.0}]}})"),
       "sched.yaml: profiles[0].plugins.score.enabled[0].weight: must not be negative, got -4"},
      {"weight not integer", Plugins(R"({"score": {"enabled": [{"name": "ImageLocality", "weight": 1.5}]}})"),
       "sched.yaml: profiles[0].plugins.score.enabled[0].weight: expected an integer, got 1.5"},
      {"EBSLimits enabled", Plugins(R"({"filter": {"enabled": [{"name": "EBSLimits"}]}})"),
       R"(sched.yaml: profiles[0].plugins.filter.enabled[0].name: plugin "EBSLimits" was removed in v1.31 and is invalid in kubescheduler.config.k8s.io/v1)"},
      {"AzureDiskLimits in multipoint", Plugins(R"({"multiPoint": {"enabled": [{"name": "AzureDiskLimits"}]}})"),
       R"(sched.yaml: profiles[0].plugins.multiPoint.enabled[0].name: plugin "AzureDiskLimits" was removed in v1.31 and is invalid in kubescheduler.config.k8s.io/v1)"},
      {"CinderLimits prefilter", Plugins(R"({"preFilter": {"enabled": [{"name": "CinderLimits"}]}})"),
       R"(sched.yaml: profiles[0].plugins.preFilter.enabled[0].name: plugin "CinderLimits" was removed in v1.31 and is invalid in kubescheduler.config.k8s.io/v1)"},
      {"GCEPDLimits pluginConfig", Doc(R"({"profiles": [{"pluginConfig": [{"name": "GCEPDLimits", "args": {}}]}]})"),
       R"(sched.yaml: profiles[0].pluginConfig[0].name: plugin "GCEPDLimits" was removed in v1.31 and is invalid in kubescheduler.config.k8s.io/v1)"},
      {"no queue sort", Plugins(R"({"multiPoint": {"disabled": [{"name": "PrioritySort"}]}})"),
       "sched.yaml: profiles[0].plugins.queueSort: exactly one QueueSort plugin must be enabled, got 0"},
      {"no bind", Plugins(R"({"bind": {"disabled": [{"name": "*"}]}})"),
       "sched.yaml: profiles[0].plugins.bind: at least one Bind plugin must be enabled, got 0"},
      {"disabled without name", Plugins(R"({"score": {"disabled": [{}]}})"),
       "sched.yaml: profiles[0].plugins.score.disabled[0].name: required"},
      {"unknown plugin set field", Plugins(R"({"score": {"enable": []}})"),
       "sched.yaml: profiles[0].plugins.score.enable: unknown field"},
      {"queue sort differs", Doc(R"({"profiles": [{"schedulerName": "a"},
           {"schedulerName": "b", "plugins": {"queueSort": {"enabled": [{"name": "PrioritySort"}]}}}]})"),
       "sched.yaml: profiles[1].plugins.queueSort: must be the same for all profiles (differs from profiles[0])"},
      {"duplicate pluginConfig", Doc(R"({"profiles": [{"pluginConfig": [
           {"name": "NodeResourcesFit", "args": {}}, {"name": "ImageLocality"}, {"name": "NodeResourcesFit", "args": {}}]}]})"),
       R"(sched.yaml: profiles[0].pluginConfig[2].name: duplicate pluginConfig for plugin "NodeResourcesFit" (first at pluginConfig[0]))"},
      {"unknown pluginConfig plugin", Doc(R"({"profiles": [{"pluginConfig": [{"name": "Foo", "args": {}}]}]})"),
       R"(sched.yaml: profiles[0].pluginConfig[0].name: unknown plugin "Foo")"},
      {"pluginConfig without name", Doc(R"({"profiles": [{"pluginConfig": [{"args": {}}]}]})"),
       "sched.yaml: profiles[0].pluginConfig[0].name: required"},
      {"bad args weight (brief example)", Doc(R"({"profiles": [{"pluginConfig": [
           {"name": "InterPodAffinity", "args": {"hardPodAffinityWeight": 2}},
           {"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "LeastAllocated",
                                                 "resources": [{"name": "cpu", "weight": 200}]}}}]}]})"),
       "sched.yaml: profiles[0].pluginConfig[1].args.scoringStrategy.resources[0].weight: must be in (0, 100], got 200"},
      {"bad args in second profile", Doc(R"({"profiles": [{"schedulerName": "a"}, {"schedulerName": "b",
           "pluginConfig": [{"name": "InterPodAffinity", "args": {"hardPodAffinityWeight": 101}}]}]})"),
       "sched.yaml: profiles[1].pluginConfig[0].args.hardPodAffinityWeight: must be in [0, 100], got 101"},
  };
  for (const RejectCase& c : cases) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<SchedulerConfig> cfg = DecodeSchedulerConfig(json::parse(c.doc), "sched.yaml");
    ASSERT_FALSE(cfg.ok()) << "accepted: " << c.doc;
    EXPECT_EQ(cfg.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(cfg.status().message(), c.error);
  }
}

// ---------------------------------------------------------------------------------------
// Plugin args

PluginArgs Decode(const std::string& plugin, const std::string& args_text) {
  PluginArgs out;
  absl::Status s = DecodePluginArgs(plugin, json::parse(args_text), "args", &out);
  EXPECT_TRUE(s.ok()) << plugin << " " << args_text << ": " << s;
  return out;
}

TEST(PluginArgsTest, DefaultsMatchV1Defaulting) {
  PluginArgs a;
  EXPECT_TRUE(a.node_resources_fit.ignored_resources.empty());
  EXPECT_TRUE(a.node_resources_fit.ignored_resource_groups.empty());
  EXPECT_EQ(a.node_resources_fit.strategy, "LeastAllocated");
  ASSERT_EQ(a.node_resources_fit.resources.size(), 2u);
  EXPECT_EQ(a.node_resources_fit.resources[0].name, "cpu");
  EXPECT_EQ(a.node_resources_fit.resources[1].name, "memory");
  EXPECT_TRUE(a.node_resources_fit.shape.empty());
  ASSERT_EQ(a.balanced_allocation.resources.size(), 2u);
  EXPECT_EQ(a.balanced_allocation.resources[1].weight, 1);
  EXPECT_FALSE(a.node_affinity.added_affinity.has_value());
  EXPECT_EQ(a.inter_pod_affinity.hard_pod_affinity_weight, 1);
  EXPECT_FALSE(a.inter_pod_affinity.ignore_preferred_terms_of_existing_pods);
  EXPECT_EQ(a.pod_topology_spread.defaulting_type, "System");
  EXPECT_TRUE(a.pod_topology_spread.default_constraints.empty());
  EXPECT_EQ(a.volume_binding.bind_timeout_seconds, 600);
  ASSERT_EQ(a.volume_binding.shape.size(), 2u);
  EXPECT_EQ(a.volume_binding.shape[0].utilization, 0);
  EXPECT_EQ(a.volume_binding.shape[0].score, 10);
  EXPECT_EQ(a.volume_binding.shape[1].utilization, 100);
  EXPECT_EQ(a.volume_binding.shape[1].score, 0);
}

TEST(PluginArgsTest, NullAndEmptyArgsGiveTheDefaults) {
  for (const char* plugin : {"NodeResourcesFit", "NodeResourcesBalancedAllocation", "NodeAffinity",
                             "InterPodAffinity", "PodTopologySpread", "VolumeBinding", "DefaultPreemption",
                             "DynamicResources", "ImageLocality", "TaintToleration", "PrioritySort"}) {
    for (const char* args : {"null", "{}"}) {
      SCOPED_TRACE(std::string(plugin) + " " + args);
      // Start from non-default values: an entry replaces the whole args object.
      PluginArgs out;
      out.node_resources_fit.strategy = "MostAllocated";
      out.inter_pod_affinity.hard_pod_affinity_weight = 50;
      ASSERT_TRUE(DecodePluginArgs(plugin, json::parse(args), "args", &out).ok());
      std::string plugin_name = plugin;
      EXPECT_EQ(out.node_resources_fit.strategy, plugin_name == "NodeResourcesFit" ? "LeastAllocated" : "MostAllocated");
      EXPECT_EQ(out.inter_pod_affinity.hard_pod_affinity_weight, plugin_name == "InterPodAffinity" ? 1 : 50);
    }
  }
}

TEST(PluginArgsTest, NodeResourcesFitDefaultsFieldByField) {
  {
    NodeResourcesFitArgs a = Decode("NodeResourcesFit", R"({"scoringStrategy": {"type": "MostAllocated"}})").node_resources_fit;
    EXPECT_EQ(a.strategy, "MostAllocated");
    ASSERT_EQ(a.resources.size(), 2u);
    EXPECT_EQ(a.resources[0].name, "cpu");
    EXPECT_EQ(a.resources[0].weight, 1);
    EXPECT_EQ(a.resources[1].name, "memory");
    EXPECT_EQ(a.resources[1].weight, 1);
  }
  {
    NodeResourcesFitArgs a =
        Decode("NodeResourcesFit", R"({"scoringStrategy": {"type": "LeastAllocated", "resources": []}})").node_resources_fit;
    ASSERT_EQ(a.resources.size(), 2u);
    EXPECT_EQ(a.resources[1].name, "memory");
  }
  {
    NodeResourcesFitArgs a = Decode("NodeResourcesFit", R"({"scoringStrategy": {"type": "LeastAllocated",
        "resources": [{"name": "nvidia.com/gpu", "weight": 0}, {"name": "cpu"}, {"name": "memory", "weight": 100}]}})")
                                 .node_resources_fit;
    ASSERT_EQ(a.resources.size(), 3u);
    EXPECT_EQ(a.resources[0].name, "nvidia.com/gpu");
    EXPECT_EQ(a.resources[0].weight, 1);
    EXPECT_EQ(a.resources[1].weight, 1);
    EXPECT_EQ(a.resources[2].weight, 100);
    EXPECT_TRUE(a.shape.empty());
  }
  {
    // Only ignored resources: the strategy keeps its default.
    NodeResourcesFitArgs a = Decode("NodeResourcesFit", R"({"ignoredResources": ["example.com/bbb"],
        "ignoredResourceGroups": ["example.com"]})").node_resources_fit;
    EXPECT_EQ(a.ignored_resources, Names{"example.com/bbb"});
    EXPECT_EQ(a.ignored_resource_groups, Names{"example.com"});
    EXPECT_EQ(a.strategy, "LeastAllocated");
    EXPECT_EQ(a.resources.size(), 2u);
  }
  {
    NodeResourcesFitArgs a = Decode("NodeResourcesFit", R"({"apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "NodeResourcesFitArgs", "scoringStrategy": {"type": "RequestedToCapacityRatio",
        "resources": [{"name": "intel.com/foo", "weight": 3}, {"name": "intel.com/bar", "weight": 5}],
        "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 0}, {"utilization": 50, "score": 3},
                                               {"utilization": 100, "score": 10}]}}})").node_resources_fit;
    EXPECT_EQ(a.strategy, "RequestedToCapacityRatio");
    ASSERT_EQ(a.resources.size(), 2u);
    EXPECT_EQ(a.resources[1].name, "intel.com/bar");
    EXPECT_EQ(a.resources[1].weight, 5);
    ASSERT_EQ(a.shape.size(), 3u);
    EXPECT_EQ(a.shape[1].utilization, 50);
    EXPECT_EQ(a.shape[1].score, 3);
    EXPECT_EQ(a.shape[2].score, 10);
  }
}

TEST(PluginArgsTest, BalancedAllocationDefaults) {
  {
    NodeResourcesBalancedAllocationArgs a = Decode("NodeResourcesBalancedAllocation", R"({"resources": []})").balanced_allocation;
    ASSERT_EQ(a.resources.size(), 2u);
    EXPECT_EQ(a.resources[0].name, "cpu");
    EXPECT_EQ(a.resources[1].name, "memory");
  }
  {
    NodeResourcesBalancedAllocationArgs a = Decode("NodeResourcesBalancedAllocation",
        R"({"resources": [{"name": "cpu", "weight": 0}, {"name": "memory"}, {"name": "nvidia.com/gpu", "weight": 1}]})")
                                                .balanced_allocation;
    ASSERT_EQ(a.resources.size(), 3u);
    EXPECT_EQ(a.resources[0].weight, 1);
    EXPECT_EQ(a.resources[1].weight, 1);
    EXPECT_EQ(a.resources[2].name, "nvidia.com/gpu");
  }
}

TEST(PluginArgsTest, InterPodAffinityDefaultsOnlyWhenUnset) {
  EXPECT_EQ(Decode("InterPodAffinity", R"({"ignorePreferredTermsOfExistingPods": true})").inter_pod_affinity.hard_pod_affinity_weight, 1);
  EXPECT_TRUE(Decode("InterPodAffinity", R"({"ignorePreferredTermsOfExistingPods": true})")
                  .inter_pod_affinity.ignore_preferred_terms_of_existing_pods);
  EXPECT_EQ(Decode("InterPodAffinity", R"({"hardPodAffinityWeight": null})").inter_pod_affinity.hard_pod_affinity_weight, 1);
  EXPECT_EQ(Decode("InterPodAffinity", R"({"hardPodAffinityWeight": 0})").inter_pod_affinity.hard_pod_affinity_weight, 0);
  EXPECT_EQ(Decode("InterPodAffinity", R"({"hardPodAffinityWeight": 100})").inter_pod_affinity.hard_pod_affinity_weight, 100);
}

TEST(PluginArgsTest, PodTopologySpreadDefaultsAndConstraints) {
  EXPECT_EQ(Decode("PodTopologySpread", R"({"defaultingType": ""})").pod_topology_spread.defaulting_type, "System");
  EXPECT_EQ(Decode("PodTopologySpread", R"({"defaultConstraints": []})").pod_topology_spread.defaulting_type, "System");
  PodTopologySpreadArgs a = Decode("PodTopologySpread", R"({"defaultingType": "List", "defaultConstraints": [
      {"maxSkew": 3, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "DoNotSchedule",
       "minDomains": 2, "nodeAffinityPolicy": "Ignore", "nodeTaintsPolicy": "Honor", "matchLabelKeys": ["app"]},
      {"maxSkew": 5, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "ScheduleAnyway"}]})")
                                .pod_topology_spread;
  EXPECT_EQ(a.defaulting_type, "List");
  ASSERT_EQ(a.default_constraints.size(), 2u);
  const TopologySpreadConstraint& c = a.default_constraints[0];
  EXPECT_EQ(c.max_skew, 3);
  EXPECT_EQ(c.topology_key, "kubernetes.io/hostname");
  EXPECT_EQ(c.when_unsatisfiable, "DoNotSchedule");
  EXPECT_EQ(c.min_domains, std::optional<int32_t>(2));
  EXPECT_EQ(c.node_affinity_policy, std::optional<std::string>("Ignore"));
  EXPECT_EQ(c.node_taints_policy, std::optional<std::string>("Honor"));
  EXPECT_EQ(c.match_label_keys, Names{"app"});
  EXPECT_FALSE(c.label_selector.has_value());
  EXPECT_EQ(a.default_constraints[1].max_skew, 5);
  EXPECT_FALSE(a.default_constraints[1].min_domains.has_value());
  // List with no constraints is allowed: pods without constraints are then not spread.
  EXPECT_TRUE(Decode("PodTopologySpread", R"({"defaultingType": "List"})").pod_topology_spread.default_constraints.empty());
}

TEST(PluginArgsTest, VolumeBindingDefaults) {
  VolumeBindingArgs a = Decode("VolumeBinding", R"({"bindTimeoutSeconds": 300})").volume_binding;
  EXPECT_EQ(a.bind_timeout_seconds, 300);
  ASSERT_EQ(a.shape.size(), 2u);
  EXPECT_EQ(a.shape[0].score, 10);
  a = Decode("VolumeBinding", R"({"shape": []})").volume_binding;
  EXPECT_EQ(a.bind_timeout_seconds, 600);
  ASSERT_EQ(a.shape.size(), 2u);
  EXPECT_EQ(a.shape[1].score, 0);
  a = Decode("VolumeBinding", R"({"bindTimeoutSeconds": 0, "shape": [{"utilization": 0, "score": 0},
      {"utilization": 50, "score": 3}, {"utilization": 100, "score": 5}]})").volume_binding;
  EXPECT_EQ(a.bind_timeout_seconds, 0);
  ASSERT_EQ(a.shape.size(), 3u);
  EXPECT_EQ(a.shape[1].utilization, 50);
  EXPECT_EQ(a.shape[2].score, 5);
}

TEST(PluginArgsTest, NodeAffinityAddedAffinity) {
  NodeAffinityArgs a = Decode("NodeAffinity", R"({"addedAffinity": {
      "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "label_1", "operator": "In", "values": ["label_1_val"]},
                              {"key": "cpu-count", "operator": "Gt", "values": ["0206"]}],
         "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["host_1"]}]},
        {}]},
      "preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 2, "preference": {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}},
        {"weight": 0, "preference": {"matchExpressions": [{"key": "bad key!", "operator": "Nope"}]}}]}})")
                           .node_affinity;
  ASSERT_TRUE(a.added_affinity.has_value());
  ASSERT_TRUE(a.added_affinity->required.has_value());
  ASSERT_EQ(a.added_affinity->required->terms.size(), 2u);
  const NodeSelectorTerm& t = a.added_affinity->required->terms[0];
  ASSERT_EQ(t.match_expressions.size(), 2u);
  EXPECT_EQ(t.match_expressions[0].key, "label_1");
  EXPECT_EQ(t.match_expressions[0].op, "In");
  EXPECT_EQ(t.match_expressions[0].values, Names{"label_1_val"});
  EXPECT_EQ(t.match_expressions[1].op, "Gt");
  ASSERT_EQ(t.match_fields.size(), 1u);
  EXPECT_EQ(t.match_fields[0].key, "metadata.name");
  EXPECT_EQ(t.match_fields[0].values, Names{"host_1"});
  EXPECT_TRUE(a.added_affinity->required->terms[1].match_expressions.empty());
  // The zero-weight term is kept but never parsed, as upstream skips it.
  ASSERT_EQ(a.added_affinity->preferred.size(), 2u);
  EXPECT_EQ(a.added_affinity->preferred[0].weight, 2);
  EXPECT_EQ(a.added_affinity->preferred[0].preference.match_expressions[0].op, "Exists");
  EXPECT_EQ(a.added_affinity->preferred[1].weight, 0);

  NodeAffinityArgs only_preferred = Decode("NodeAffinity", R"({"addedAffinity": {
      "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 5, "preference": {}}]}})").node_affinity;
  ASSERT_TRUE(only_preferred.added_affinity.has_value());
  EXPECT_FALSE(only_preferred.added_affinity->required.has_value());
  EXPECT_EQ(only_preferred.added_affinity->preferred.size(), 1u);

  EXPECT_FALSE(Decode("NodeAffinity", R"({"addedAffinity": null})").node_affinity.added_affinity.has_value());
}

TEST(PluginArgsTest, PluginsWithOtherArgsValidateThem) {
  Decode("DefaultPreemption", R"({"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 10})");
  Decode("DefaultPreemption", R"({"kind": "DefaultPreemptionArgs", "minCandidateNodesPercentage": 100})");
  Decode("DynamicResources", R"({"filterTimeout": "0", "bindingTimeout": "1m30s"})");
  Decode("DynamicResources", R"({"filterTimeout": "1.5s"})");
  Decode("ImageLocality", "{}");
}

TEST(PluginArgsTest, EveryConformancePluginConfigDecodes) {
  namespace fs = std::filesystem;
  fs::path root = fs::path(KPLACE_SHARED_DIR) / "conformance";
  if (!fs::exists(root)) GTEST_SKIP() << "no conformance directory at " << root;
  int entries = 0;
  for (const fs::directory_entry& e : fs::recursive_directory_iterator(root)) {
    if (e.path().extension() != ".json") continue;
    std::ifstream in(e.path());
    json c = json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (!c.is_object() || !c.contains("profile") || !c["profile"].is_object() ||
        !c["profile"].contains("pluginConfig")) {
      continue;
    }
    const json& configs = c["profile"]["pluginConfig"];
    for (size_t i = 0; i < configs.size(); ++i) {
      PluginArgs out;
      std::string where = e.path().filename().string() + ": profile.pluginConfig[" + std::to_string(i) + "].args";
      absl::Status s = DecodePluginArgs(configs[i]["name"].get<std::string>(),
                                        configs[i].contains("args") ? configs[i]["args"] : json(), where, &out);
      EXPECT_TRUE(s.ok()) << s;
      ++entries;
    }
  }
  EXPECT_GT(entries, 100);
}

TEST(PluginArgsTest, ConformanceStyleArgsLandInTheirMember) {
  PluginArgs out;
  ASSERT_TRUE(DecodePluginArgs("InterPodAffinity", json::parse(R"({"hardPodAffinityWeight": 0,
      "ignorePreferredTermsOfExistingPods": false})"), "case.json: ", &out).ok());
  ASSERT_TRUE(DecodePluginArgs("PodTopologySpread", json::parse(R"({"defaultConstraints": [
      {"maxSkew": 2, "topologyKey": "planet", "whenUnsatisfiable": "ScheduleAnyway"}], "defaultingType": "List"})"),
                               "case.json: ", &out).ok());
  EXPECT_EQ(out.inter_pod_affinity.hard_pod_affinity_weight, 0);
  EXPECT_EQ(out.pod_topology_spread.default_constraints.at(0).topology_key, "planet");
  // Members of other plugins are left alone.
  EXPECT_EQ(out.node_resources_fit.strategy, "LeastAllocated");
  EXPECT_EQ(out.volume_binding.bind_timeout_seconds, 600);
}

struct ArgsRejectCase {
  const char* plugin;
  const char* args;
  std::string error;  // exact message, with where = "sched.yaml: profiles[0].pluginConfig[1].args"
};

TEST(PluginArgsTest, RejectsInvalidArgsNamingTheField) {
  const std::string w = "sched.yaml: profiles[0].pluginConfig[1].args";
  const ArgsRejectCase cases[] = {
      // Plugin names and argument shapes.
      {"Foo", "{}", w + R"(: unknown plugin "Foo")"},
      {"EBSLimits", "{}", w + R"(: plugin "EBSLimits" was removed in v1.31 and is invalid in kubescheduler.config.k8s.io/v1)"},
      {"NodeResourcesFit", "[]", w + ": expected an object, got array"},
      {"ImageLocality", R"({"weight": 1})", w + R"(: plugin "ImageLocality" takes no arguments, got {"weight":1})"},
      {"NodeResourcesFit", R"({"kind": "InterPodAffinityArgs"})",
       w + R"(.kind: must be "NodeResourcesFitArgs" for plugin "NodeResourcesFit", got "InterPodAffinityArgs")"},
      {"NodeResourcesFit", R"({"apiVersion": "kubescheduler.config.k8s.io/v1beta3"})",
       w + R"(.apiVersion: must be "kubescheduler.config.k8s.io/v1", got "kubescheduler.config.k8s.io/v1beta3")"},
      // NodeResourcesFit.
      {"NodeResourcesFit", R"({"scoringStrateg": {}})", w + ".scoringStrateg: unknown field"},
      {"NodeResourcesFit", R"({"scoringStrategy": {"type": "LeastAllocated", "resources": [{"name": "cpu", "weight": 200}]}})",
       w + ".scoringStrategy.resources[0].weight: must be in (0, 100], got 200"},
      {"NodeResourcesFit", R"({"scoringStrategy": {"type": "MostAllocated", "resources": [{"name": "cpu"}, {"name": "memory", "weight": -1}]}})",
       w + ".scoringStrategy.resources[1].weight: must be in (0, 100], got -1"},
      {"NodeResourcesFit", R"({"scoringStrategy": {"type": "Balanced"}})",
       w + R"(.scoringStrategy.type: must be one of LeastAllocated, MostAllocated, RequestedToCapacityRatio, got "Balanced")"},
      {"NodeResourcesFit", R"({"scoringStrategy": {"resources": [{"name": "cpu", "weight": 1}]}})",
       w + R"(.scoringStrategy.type: must be one of LeastAllocated, MostAllocated, RequestedToCapacityRatio, got "")"},
      {"NodeResourcesFit", R"({"scoringStrategy": {"type": "RequestedToCapacityRatio"}})",
       w + ".scoringStrategy.requestedToCapacityRatio: required when type is RequestedToCapacityRatio"},
      {"NodeResourcesFit", R"({"scoringStrategy": {"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {"shape": []}}})",
       w + ".scoringStrategy.requestedToCapacityRatio.shape: at least one point must be specified"},
      {"NodeResourcesFit", R"({"scoringStrategy": {"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {"shape": [{"utilization": 101, "score": 0}]}}})",
       w + ".scoringStrategy.requestedToCapacityRatio.shape[0].utilization: must be in [0, 100], got 101"},
      {"NodeResourcesFit", R"({"scoringStrategy": {"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 0}, {"utilization": 10, "score": 11}]}}})",
       w + ".scoringStrategy.requestedToCapacityRatio.shape[1].score: must be in [0, 10], got 11"},
      {"NodeResourcesFit", R"({"scoringStrategy": {"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": -1}]}}})",
       w + ".scoringStrategy.requestedToCapacityRatio.shape[0].score: must be in [0, 10], got -1"},
      {"NodeResourcesFit", R"({"scoringStrategy": {"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {"shape": [{"utilization": 50, "score": 1}, {"utilization": 50, "score": 2}]}}})",
       w + ".scoringStrategy.requestedToCapacityRatio.shape[1].utilization: utilization values must be strictly increasing, got 50 after 50"},
      {"NodeResourcesFit", R"({"scoringStrategy": {"type": "LeastAllocated", "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 0}]}}})",
       w + R"(.scoringStrategy.requestedToCapacityRatio: must not be set when type is "LeastAllocated" (only with RequestedToCapacityRatio))"},
      {"NodeResourcesFit", R"({"scoringStrategy": {"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {"shape": [{"utilization": 0, "scor": 0}]}}})",
       w + ".scoringStrategy.requestedToCapacityRatio.shape[0].scor: unknown field"},
      {"NodeResourcesFit", R"({"ignoredResources": ["example.com/ok", "bad name!"]})",
       w + R"(.ignoredResources[1]: must be a qualified name (an optional DNS subdomain prefix and '/', then 1-63 characters of [A-Za-z0-9-_.] starting and ending with an alphanumeric character), got "bad name!")"},
      {"NodeResourcesFit", R"({"ignoredResourceGroups": ["example.com/x"]})",
       w + R"(.ignoredResourceGroups[0]: resource group name must not contain '/', got "example.com/x")"},
      {"NodeResourcesFit", R"({"ignoredResourceGroups": ["-bad"]})",
       w + R"(.ignoredResourceGroups[0]: must be a qualified name (an optional DNS subdomain prefix and '/', then 1-63 characters of [A-Za-z0-9-_.] starting and ending with an alphanumeric character), got "-bad")"},
      {"NodeResourcesFit", R"({"ignoredResources": "cpu"})", w + ".ignoredResources: expected a list, got string"},
      // NodeResourcesBalancedAllocation.
      {"NodeResourcesBalancedAllocation", R"({"resources": [{"name": "cpu", "weight": 2}]})",
       w + ".resources[0].weight: must be 1, got 2"},
      {"NodeResourcesBalancedAllocation", R"({"resources": [{"name": "cpu"}, {"name": "cpu"}]})",
       w + R"(.resources[1].name: duplicate resource name "cpu")"},
      // InterPodAffinity.
      {"InterPodAffinity", R"({"hardPodAffinityWeight": 101})", w + ".hardPodAffinityWeight: must be in [0, 100], got 101"},
      {"InterPodAffinity", R"({"hardPodAffinityWeight": -1})", w + ".hardPodAffinityWeight: must be in [0, 100], got -1"},
      {"InterPodAffinity", R"({"ignorePreferredTermsOfExistingPods": "yes"})",
       w + R"(.ignorePreferredTermsOfExistingPods: expected a boolean, got "yes")"},
      // PodTopologySpread.
      {"PodTopologySpread", R"({"defaultingType": "Custom"})", w + R"(.defaultingType: must be System or List, got "Custom")"},
      {"PodTopologySpread", R"({"defaultConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}]})",
       w + R"(.defaultConstraints: must be empty when defaultingType is "System", got 1 constraints)"},
      {"PodTopologySpread", R"({"defaultingType": "List", "defaultConstraints": [{"maxSkew": 0, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}]})",
       w + ".defaultConstraints[0].maxSkew: must be greater than 0, got 0"},
      {"PodTopologySpread", R"({"defaultingType": "List", "defaultConstraints": [{"maxSkew": 1, "whenUnsatisfiable": "DoNotSchedule"}]})",
       w + R"(.defaultConstraints[0].topologyKey: required, got "")"},
      {"PodTopologySpread", R"({"defaultingType": "List", "defaultConstraints": [{"maxSkew": 1, "topologyKey": "a/b/c", "whenUnsatisfiable": "DoNotSchedule"}]})",
       w + R"(.defaultConstraints[0].topologyKey: must be a qualified name (an optional DNS subdomain prefix and '/', then 1-63 characters of [A-Za-z0-9-_.] starting and ending with an alphanumeric character), got "a/b/c")"},
      {"PodTopologySpread", R"({"defaultingType": "List", "defaultConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "Maybe"}]})",
       w + R"(.defaultConstraints[0].whenUnsatisfiable: must be DoNotSchedule or ScheduleAnyway, got "Maybe")"},
      {"PodTopologySpread", R"({"defaultingType": "List", "defaultConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {}}]})",
       w + ".defaultConstraints[0].labelSelector: must not be set: default constraints take their selector from each pod"},
      {"PodTopologySpread", R"({"defaultingType": "List", "defaultConstraints": [
           {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"},
           {"maxSkew": 2, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway"},
           {"maxSkew": 3, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}]})",
       w + R"(.defaultConstraints[2]: duplicate {topologyKey, whenUnsatisfiable} "zone", "DoNotSchedule" (first at index 0))"},
      {"PodTopologySpread", R"({"defaultingType": "List", "defaultConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule", "nodeTaintsPolicy": "Always"}]})",
       w + R"(.defaultConstraints[0].nodeTaintsPolicy: must be Honor or Ignore, got "Always")"},
      // VolumeBinding.
      {"VolumeBinding", R"({"bindTimeoutSeconds": -1})", w + ".bindTimeoutSeconds: must not be negative, got -1"},
      {"VolumeBinding", R"({"shape": [{"utilization": 100, "score": 0}, {"utilization": 0, "score": 10}]})",
       w + ".shape[1].utilization: utilization values must be strictly increasing, got 0 after 100"},
      {"VolumeBinding", R"({"shape": [{"utilization": 0, "score": 20}]})", w + ".shape[0].score: must be in [0, 10], got 20"},
      // NodeAffinity: addedAffinity is parsed strictly.
      {"NodeAffinity", R"({"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
           {"matchExpressions": [{"key": "zone", "operator": "Equals", "values": ["a"]}]}]}}})",
       w + R"(.addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator: must be one of In, NotIn, Exists, DoesNotExist, Gt, Lt, got "Equals")"},
      {"NodeAffinity", R"({"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
           {}, {"matchExpressions": [{"key": "zone", "operator": "In", "values": []}]}]}}})",
       w + ".addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[1].matchExpressions[0].values: must be non-empty for operator In"},
      {"NodeAffinity", R"({"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
           {"matchExpressions": [{"key": "zone", "operator": "Exists", "values": ["a"]}]}]}}})",
       w + ".addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values: must be empty for operator Exists, got 1 values"},
      {"NodeAffinity", R"({"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
           {"matchExpressions": [{"key": "cpus", "operator": "Gt", "values": ["abc"]}]}]}}})",
       w + R"(.addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values[0]: must be an integer for operator Gt, got "abc")"},
      // ParseInt accepts a sign, but the value must still be a label value.
      {"NodeAffinity", R"({"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
           {"matchExpressions": [{"key": "cpus", "operator": "Gt", "values": ["-5"]}]}]}}})",
       w + R"(.addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values[0]: must be a valid label value (at most 63 characters of [A-Za-z0-9-_.] starting and ending with an alphanumeric character), got "-5")"},
      {"NodeAffinity", R"({"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
           {"matchExpressions": [{"key": "cpus", "operator": "Gt", "values": ["99999999999999999999"]}]}]}}})",
       w + R"(.addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values[0]: must be an integer for operator Gt, got "99999999999999999999")"},
      {"NodeAffinity", R"({"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
           {"matchExpressions": [{"key": "cpus", "operator": "Lt", "values": ["1", "2"]}]}]}}})",
       w + ".addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values: must have exactly one value for operator Lt, got 2"},
      {"NodeAffinity", R"({"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
           {"matchExpressions": [{"key": "bad key", "operator": "Exists"}]}]}}})",
       w + R"(.addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].key: must be a qualified name (an optional DNS subdomain prefix and '/', then 1-63 characters of [A-Za-z0-9-_.] starting and ending with an alphanumeric character), got "bad key")"},
      {"NodeAffinity", R"({"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
           {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["ok", "not ok"]}]}]}}})",
       w + R"(.addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values[1]: must be a valid label value (at most 63 characters of [A-Za-z0-9-_.] starting and ending with an alphanumeric character), got "not ok")"},
      {"NodeAffinity", R"({"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
           {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["a", "b"]}]}]}}})",
       w + ".addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchFields[0].values: must have exactly one value for matchFields, got 2"},
      {"NodeAffinity", R"({"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
           {"matchFields": [{"key": "metadata.name", "operator": "Exists"}]}]}}})",
       w + R"(.addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchFields[0].operator: must be In or NotIn for matchFields, got "Exists")"},
      {"NodeAffinity", R"({"addedAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
           {"weight": 1, "preference": {"matchExpressions": [{"key": "zone", "operator": "NotIn"}]}}]}})",
       w + ".addedAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].preference.matchExpressions[0].values: must be non-empty for operator NotIn"},
      {"NodeAffinity", R"({"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
           {"matchExpression": []}]}}})",
       w + ".addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpression: unknown field"},
      {"NodeAffinity", R"({"addedAffinity": []})", w + ".addedAffinity: expected an object, got array"},
      // DefaultPreemption and DynamicResources.
      {"DefaultPreemption", R"({"minCandidateNodesPercentage": 101})",
       w + ".minCandidateNodesPercentage: must be in [0, 100], got 101"},
      {"DefaultPreemption", R"({"minCandidateNodesAbsolute": -1})", w + ".minCandidateNodesAbsolute: must not be negative, got -1"},
      {"DefaultPreemption", R"({"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0})",
       w + ": minCandidateNodesPercentage and minCandidateNodesAbsolute must not both be 0"},
      {"DynamicResources", R"({"filterTimeout": "ten seconds"})",
       w + R"(.filterTimeout: must be a duration such as "10s", got "ten seconds")"},
      {"DynamicResources", R"({"filterTimeout": "1e9s"})",
       w + R"(.filterTimeout: must be a duration such as "10s", got "1e9s")"},
      {"DynamicResources", R"({"filterTimeout": "9999999999999h"})",
       w + R"(.filterTimeout: must be a duration such as "10s", got "9999999999999h")"},
      {"DynamicResources", R"({"bindingTimeout": "10"})", w + R"(.bindingTimeout: must be a duration such as "10s", got "10")"},
      {"DynamicResources", R"({"filterTimeout": "-1s"})", w + R"(.filterTimeout: must not be negative, got "-1s")"},
      {"DynamicResources", R"({"bindingTimeout": "500ms"})", w + R"(.bindingTimeout: must be at least 1s, got "500ms")"},
  };
  for (const ArgsRejectCase& c : cases) {
    SCOPED_TRACE(std::string(c.plugin) + " " + c.args);
    PluginArgs out;
    out.inter_pod_affinity.hard_pod_affinity_weight = 42;
    absl::Status s = DecodePluginArgs(c.plugin, json::parse(c.args), w, &out);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(s.message(), c.error);
    // A rejected entry leaves the arguments as they were.
    EXPECT_EQ(out.inter_pod_affinity.hard_pod_affinity_weight, 42);
    EXPECT_EQ(out.node_resources_fit.strategy, "LeastAllocated");
  }
}

TEST(PluginArgsTest, ErrorPathWithoutPrefix) {
  PluginArgs out;
  absl::Status s = DecodePluginArgs("InterPodAffinity", json::parse(R"({"hardPodAffinityWeight": 500})"), "", &out);
  EXPECT_EQ(s.message(), "hardPodAffinityWeight: must be in [0, 100], got 500");
  s = DecodePluginArgs("Nope", json::object(), "", &out);
  EXPECT_EQ(s.message(), R"(unknown plugin "Nope")");
}

}  // namespace
}  // namespace kplace
