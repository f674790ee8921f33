// The built-in workloads, written in scheduler_perf's performance-config format
// (bench/scheduler_perf/), against the kplace-format files they replaced (kept in
// testdata/kplace_format/ for this test): for every workload and every variant, the same
// variants, cluster, pods, churn, deletions and settings.
#include <dirent.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "kplace/bench/perf_config.h"
#include "kplace/bench/workload.h"
#include "kplace/common/strings.h"
#include "kplace/model/decode.h"
#include "tests/testing/model_json.h"

namespace kplace::bench {
namespace {

using json = nlohmann::json;
using testing::ToJson;

const std::string kSource = std::string(KPLACE_SOURCE_DIR) + "/";
const std::string kOldDir = kSource + "tests/bench/testdata/kplace_format/";
const std::string kNewDir = kSource + "bench/scheduler_perf/";

std::vector<std::string> ListDir(const std::string& dir) {
  std::vector<std::string> out;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] != '.') out.push_back(e->d_name);
    }
    closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The workload names kplace's own format has files for.
std::vector<std::string> OldNames() {
  std::vector<std::string> out;
  for (const std::string& f : ListDir(kOldDir)) {
    if (f.size() > 5 && f.substr(f.size() - 5) == ".yaml") out.push_back(f.substr(0, f.size() - 5));
  }
  return out;
}

// bench/scheduler_perf/<topic>/performance-config.yaml, read from the source tree: (path,
// its test cases).
std::vector<std::pair<std::string, json>> NewConfigs() {
  std::vector<std::pair<std::string, json>> out;
  for (const std::string& topic : ListDir(kNewDir)) {
    const std::string path = kNewDir + topic + "/performance-config.yaml";
    auto text = ReadFileText(path);
    if (!text.ok()) continue;
    auto docs = ParseDocuments(*text, path);
    EXPECT_TRUE(docs.ok()) << docs.status();
    if (docs.ok() && docs->size() == 1) out.emplace_back(path, (*docs)[0]);
  }
  return out;
}

// The test case `name` from the source tree, or NotFound.
absl::StatusOr<Workload> LoadNew(const std::string& name) {
  for (const auto& [path, config] : NewConfigs()) {
    for (const json& tc : config) {
      if (tc.value("name", "") == name) return DecodePerfConfigTestCase(config, path, name);
    }
  }
  return absl::NotFoundError(StrCat("no test case ", name, " under ", kNewDir));
}

// Where the kplace-format files named a namespace otherwise than upstream's ops do (the
// performance-config files follow upstream): the measured createPods op's namespace-<op
// index> missed a deletePods (and barrier) op before it, or was "default" where upstream's
// op has no namespace, and churn ran in kplace's default namespace "churn" rather than
// namespace-<the churn op's index>.
const std::map<std::string, std::map<std::string, std::string>>& NamespaceFixes() {
  static const std::map<std::string, std::map<std::string, std::string>> fixes = {
      {"HostPortConflict", {{"default", "namespace-1"}}},
      {"ResourceSaturation", {{"default", "namespace-1"}}},
      {"SchedulingDeletedPodsWithFinalizers", {{"namespace-2", "namespace-3"}}},
      {"SchedulingWhileGated", {{"namespace-4", "namespace-5"}}},
      {"SchedulingWithMixedChurn", {{"churn", "namespace-1"}}},
      {"Unschedulable", {{"churn", "namespace-2"}}},
  };
  return fixes;
}

void FixNamespaces(Workload& w) {
  auto it = NamespaceFixes().find(w.name);
  if (it == NamespaceFixes().end()) return;
  auto fix = [&](std::string& ns) {
    if (auto f = it->second.find(ns); f != it->second.end()) ns = f->second;
  };
  for (PodGroup& g : w.init) fix(g.namespace_);
  fix(w.measured.namespace_);
  if (w.churn) fix(w.churn->namespace_);
  fix(w.metrics_name);
  for (json& ns : w.namespaces) {
    std::string name = ns["metadata"]["name"].get<std::string>();
    fix(name);
    ns["metadata"]["name"] = name;
  }
}

// A variant as the two formats can both say it: node counts per group (one group may be a
// plain count in kplace's format), the other counts and the workload entry's own fields.
json VariantJson(const Variant& v) {
  return {{"name", v.name},
          {"nodes", v.node_groups.empty() ? std::vector<int32_t>{v.nodes} : v.node_groups},
          {"allNodes", v.nodes},
          {"init", v.init},
          {"measured", v.measured},
          {"threshold", v.threshold ? json(*v.threshold) : json()},
          {"upstream", v.upstream},
          {"featureGates", v.feature_gates},
          {"labels", v.labels},
          {"signatureBatchSize", v.signature_batch_size},
          {"podGroups", v.pod_groups},
          {"params", v.params}};
}

json MixJson(const std::optional<HeterogeneousMix>& m) {
  if (!m) return nullptr;
  json taints = json::array();
  for (const Taint& t : m->taints) taints.push_back({t.key, t.value, t.effect});
  return {{"seed", m->seed}, {"zones", m->zones}, {"nodeLabels", m->node_labels}, {"taints", taints}};
}

// What does not depend on the variant.
json Settings(const Workload& w) {
  json variants = json::array();
  for (const Variant& v : w.variants) variants.push_back(VariantJson(v));
  json churn = nullptr;
  if (w.churn) {
    churn = {{"recreate", w.churn->recreate}, {"number", w.churn->number}, {"intervalMs", w.churn->interval_ms},
             {"namespace", w.churn->namespace_}, {"templates", w.churn->templates}};
  }
  json deletion = nullptr;
  if (w.delete_pods) deletion = {{"group", w.delete_pods->group}, {"perSecond", w.delete_pods->per_second}};
  return {{"name", w.name},
          {"description", w.description},
          {"defaultVariant", w.variant},
          {"variants", variants},
          {"schedulerConfig", w.scheduler_config ? *w.scheduler_config : json()},
          {"churn", churn},
          {"deletePods", deletion},
          // Read only for churn's and deletePods' rates (runner.cc): compared where it is read.
          {"throughput", w.churn || w.delete_pods ? json(w.throughput) : json()},
          {"metricsName", w.metrics_name},
          {"initGroups", w.init.size()}};
}

// The variant applied: the cluster BuildCluster makes and every pod BuildPods makes.
struct Built {
  ObjectSet cluster;
  std::map<std::string, json> namespaces;  // by name: the formats list them in other orders
  std::vector<std::vector<Pod>> init;
  std::vector<Pod> measured;
};

Built Build(const Workload& w) {
  Built out;
  auto cluster = BuildCluster(w);
  EXPECT_TRUE(cluster.ok()) << cluster.status();
  if (cluster.ok()) out.cluster = std::move(*cluster);
  for (const Namespace& ns : out.cluster.namespaces) out.namespaces[ns.meta.name] = ToJson(ns);
  auto pods = [](const PodGroup& g, const std::string& prefix) {
    auto built = BuildPods(g, prefix, 1000);
    EXPECT_TRUE(built.ok()) << built.status();
    return built.ok() ? std::move(*built) : std::vector<Pod>{};
  };
  for (size_t g = 0; g < w.init.size(); ++g) out.init.push_back(pods(w.init[g], StrCat("init", g)));
  out.measured = pods(w.measured, "measured");
  return out;
}

// What is neither a built object nor a pod: each group's namespaces and generator inputs.
json GroupsJson(const Workload& w) {
  json out = json::array();
  for (const PodGroup* g : [&] {
         std::vector<const PodGroup*> all;
         for (const PodGroup& i : w.init) all.push_back(&i);
         all.push_back(&w.measured);
         return all;
       }()) {
    out.push_back({{"namespaces", g->Namespaces()}, {"mix", MixJson(g->heterogeneous)}});
  }
  return out;
}

// The first place where two JSON values differ, as a path and both values.
std::string FirstDifference(const json& a, const json& b, const std::string& path = "") {
  if (a == b) return "";
  if (a.is_object() && b.is_object()) {
    for (auto it = a.begin(); it != a.end(); ++it) {
      if (!b.contains(it.key())) return StrCat(path, ".", it.key(), ": only in the kplace-format file");
      std::string d = FirstDifference(it.value(), b[it.key()], StrCat(path, ".", it.key()));
      if (!d.empty()) return d;
    }
    for (auto it = b.begin(); it != b.end(); ++it) {
      if (!a.contains(it.key())) return StrCat(path, ".", it.key(), ": only in the performance-config file");
    }
  }
  if (a.is_array() && b.is_array()) {
    if (a.size() != b.size()) return StrCat(path, ": ", a.size(), " entries against ", b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      std::string d = FirstDifference(a[i], b[i], StrCat(path, "[", i, "]"));
      if (!d.empty()) return d;
    }
  }
  return StrCat(path, ": ", a.dump().substr(0, 400), " (kplace format) against ", b.dump().substr(0, 400));
}

// Namespaces upstream's ops make that the kplace-format files left out (every createPods
// op's, churn's and createAny's namespace is made, plain): allowed when plain and used.
void DropUpstreamOnlyNamespaces(const Workload& w, const Built& old_built, Built* new_built) {
  std::set<std::string> used;
  for (const PodGroup& g : w.init) used.insert(g.namespace_);
  used.insert(w.measured.namespace_);
  if (w.churn) used.insert(w.churn->namespace_);
  for (const json& o : w.objects) {
    if (o.contains("metadata") && o["metadata"].contains("namespace")) used.insert(o["metadata"]["namespace"].get<std::string>());
  }
  std::map<std::string, json>& namespaces = new_built->namespaces;
  for (auto it = namespaces.begin(); it != namespaces.end();) {
    const json& meta = it->second["meta"];
    const bool plain = meta["labels"].empty() && meta["annotations"].empty();
    if (!old_built.namespaces.count(it->first) && plain && used.count(it->first)) {
      it = namespaces.erase(it);
    } else {
      ++it;
    }
  }
}

// The cluster's PodGroup objects (createPodGroups).
json PodGroupsJson(const ObjectSet& cluster) {
  json out = json::array();
  for (const kplace::PodGroup& g : cluster.pod_groups) {
    out.push_back({{"namespace", g.meta.namespace_}, {"name", g.meta.name},
                   {"minCount", g.min_count ? json(*g.min_count) : json()}});
  }
  return out;
}

// The first object of two lists that differs, each rendered only while it is compared (whole
// clusters as one JSON value cost more in allocation than the rest of the test).
template <typename T>
std::string FirstDifferentObject(const std::vector<T>& a, const std::vector<T>& b, const std::string& what) {
  if (a.size() != b.size()) return StrCat(what, ": ", a.size(), " against ", b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    json ja = ToJson(a[i]), jb = ToJson(b[i]);
    if (ja != jb) return FirstDifference(ja, jb, StrCat(what, "[", i, "]"));
  }
  return "";
}

std::string FirstDifference(const Built& a, const Built& b) {
  for (std::string d : {FirstDifferentObject(a.cluster.nodes, b.cluster.nodes, "nodes"),
                        FirstDifferentObject(a.cluster.pods, b.cluster.pods, "cluster pods"),
                        FirstDifference(json(a.namespaces), json(b.namespaces), "namespaces"),
                        FirstDifferentObject(a.cluster.workloads, b.cluster.workloads, "workloads"),
                        FirstDifferentObject(a.cluster.storage, b.cluster.storage, "storage"),
                        FirstDifferentObject(a.cluster.configs, b.cluster.configs, "configs"),
                        FirstDifferentObject(a.cluster.pdbs, b.cluster.pdbs, "pdbs"),
                        FirstDifferentObject(a.cluster.priority_classes, b.cluster.priority_classes, "priorityClasses"),
                        FirstDifference(PodGroupsJson(a.cluster), PodGroupsJson(b.cluster), "podGroups"),
                        FirstDifferentObject(a.measured, b.measured, "measured")}) {
    if (!d.empty()) return d;
  }
  if (a.init.size() != b.init.size()) return StrCat("init: ", a.init.size(), " groups against ", b.init.size());
  for (size_t g = 0; g < a.init.size(); ++g) {
    std::string d = FirstDifferentObject(a.init[g], b.init[g], StrCat("init[", g, "]"));
    if (!d.empty()) return d;
  }
  return "";
}

class BuiltinWorkloadsTest : public ::testing::TestWithParam<std::string> {};

TEST_P(BuiltinWorkloadsTest, PerfConfigDecodesAsTheKplaceFormat) {
  const std::string name = GetParam();
  auto neu = LoadNew(name);
  ASSERT_TRUE(neu.ok()) << neu.status();
  auto old = LoadWorkload(kOldDir + name + ".yaml");
  ASSERT_TRUE(old.ok()) << old.status();
  FixNamespaces(*old);
  EXPECT_EQ(FirstDifference(Settings(*old), Settings(*neu)), "") << name;

  // The binary's embedded copy reads as the source tree's.
  auto embedded = LoadWorkload(name);
  ASSERT_TRUE(embedded.ok()) << embedded.status();
  EXPECT_EQ(FirstDifference(Settings(*neu), Settings(*embedded)), "") << name << " (embedded)";

  for (const Variant& v : old->variants) {
    Workload a = *old, b = *neu;
    ASSERT_TRUE(ApplyVariant(a, v.name).ok());
    ASSERT_TRUE(ApplyVariant(b, v.name).ok()) << name << " has no variant " << v.name;
    EXPECT_EQ(FirstDifference(GroupsJson(a), GroupsJson(b)), "") << name << "/" << v.name;
    Built built_a = Build(a), built_b = Build(b);
    DropUpstreamOnlyNamespaces(b, built_a, &built_b);
    EXPECT_EQ(FirstDifference(built_a, built_b), "") << name << "/" << v.name;
  }
}

// One built-in per kplace-format file and no other: the binary's list, the source tree's test
// cases and the old files name the same workloads.
TEST(BuiltinWorkloadsListTest, EveryKplaceFormatFileHasItsTwinAndNoMore) {
  std::vector<std::string> cases;
  for (const auto& [path, config] : NewConfigs()) {
    for (const json& tc : config) cases.push_back(tc.value("name", ""));
  }
  std::sort(cases.begin(), cases.end());
  EXPECT_EQ(cases, OldNames());
  EXPECT_EQ(BuiltinWorkloads(), OldNames());
  EXPECT_EQ(OldNames().size(), 31u);
}

INSTANTIATE_TEST_SUITE_P(Every, BuiltinWorkloadsTest, ::testing::ValuesIn(OldNames()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace kplace::bench
