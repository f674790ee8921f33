#pragma once
// Runs plugins on the engine and on the reference over the same cluster and returns
// every phase's outcome per node, so tests compare them value for value.
#include <string>
#include <vector>

#include "kplace/config/plugin_args.h"
#include "kplace/engine/plugin.h"
#include "kplace/framework/types.h"
#include "kplace/model/objects.h"

namespace kplace::testing {

struct PhaseOutcome {
  std::vector<PluginStatus> pre_filter;            // per plugin with PreFilter
  std::vector<std::vector<PluginStatus>> filter;   // [plugin][node], every node
  std::vector<PluginStatus> pre_score;             // per plugin with PreScore
  std::vector<std::vector<int64_t>> raw, normalized;  // [score plugin][node], all nodes scored
};

/** Runs each phase of `plugins` independently on every node, on the engine. */
PhaseOutcome RunEngine(engine::Backend backend, const ObjectSet& cluster, const Pod& pod,
                       const std::vector<std::string>& plugins, const PluginArgs& args = {},
                       const FeatureGates& gates = {});
/** The same on the scalar reference. */
PhaseOutcome RunReference(const ObjectSet& cluster, const Pod& pod, const std::vector<std::string>& plugins,
                          const PluginArgs& args = {}, const FeatureGates& gates = {});

/** A readable description of the first difference, or "" when equal. */
std::string Diff(const PhaseOutcome& engine, const PhaseOutcome& reference);

/** Builders for small hand-made clusters. */
Node MakeNode(const std::string& name, const std::map<std::string, std::string>& allocatable,
              const Labels& labels = {});
Pod MakePod(const std::string& name, const std::map<std::string, std::string>& requests,
            const std::string& node_name = "");
Quantity Q(const std::string& text);
/** A budget "pdb-<app>" in default selecting app=<app>, with `allowed` disruptions. */
PodDisruptionBudget MakePdb(const std::string& app, int32_t allowed);

}  // namespace kplace::testing
