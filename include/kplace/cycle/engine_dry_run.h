#pragma once
// Preemption's dry run on the engine. SelectVictimsOnNode asks, over and over, whether the
// preemptor fits a node with some of its pods gone. The reference answers by running the
// whole filter chain on a changed NodeInfo; here each plugin answers from its own columns:
// plugins whose verdict reads no pods keep the verdict they give now, NodeResourcesFit,
// NodePorts and NodeVolumeLimits take the removed pods off one node's row on the host
// (Plugin::FilterWithout). Whatever the engine does not answer in place (a plugin with
// cluster-wide PreFilter state in the chain, a nominated pod counting on the node, a
// verdict that is an error, a PreFilter that rejected) goes to the reference host for that
// call alone, so every answer is the reference's.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kplace/cycle/preemption.h"
#include "kplace/engine/framework.h"
#include "kplace/engine/snapshot.h"

namespace kplace::cycle {

class EngineDryRunHost final : public DryRunHost {
 public:
  /** `fw` ran PreFilter for `pod` (`pre` is its result) with nothing bound or unbound since,
   *  over `snapshot`. `index_of` maps a node name to its row (-1 when absent); `nominated`
   *  are the pending pods holding a nomination; `reference` makes the reference host for
   *  the calls the engine leaves to it (made once, when first needed). */
  EngineDryRunHost(engine::Framework& fw, const engine::PreFilterResult& pre, const Pod& pod,
                   const engine::Snapshot& snapshot, std::function<int32_t(const std::string&)> index_of,
                   std::vector<const Pod*> nominated, std::function<std::unique_ptr<DryRunHost>()> reference);
  ~EngineDryRunHost() override;

  int32_t NumNodes() const override { return snapshot_.num_nodes(); }
  const Node& NodeAt(int32_t node) const override { return snapshot_.node(node); }
  int32_t IndexOf(const std::string& name) const override { return index_of_(name); }
  const std::vector<const Pod*>& PodsOn(int32_t node) const override { return snapshot_.pods_on(node); }
  void Prefetch(const Pod& pod, const std::vector<int32_t>& nodes) override;
  PluginStatus Filter(const Pod& pod, int32_t node, const std::vector<const Pod*>& removed) override;
  bool Fits(const Pod& pod, int32_t node, const std::vector<const Pod*>& removed) override;
  int64_t filter_calls() const override { return calls_ + (reference_ ? reference_->filter_calls() : 0); }

  /** Filter calls answered by the engine, and left to the reference. */
  int64_t engine_calls() const { return calls_; }
  int64_t reference_calls() const { return delegated_; }

 private:
  PluginStatus Delegate(const Pod& pod, int32_t node, const std::vector<const Pod*>& removed);
  // The engine's answer: the filter plugin that rejects (its index and verdict in `*f` and
  // `*code`), kPasses, or kAskReference.
  static constexpr int kPasses = -1, kAskReference = -2;
  int Check(const Pod& pod, int32_t node, const std::vector<const Pod*>& removed, engine::VerdictCode* code);
  bool Rejects(int f, engine::VerdictCode code);
  bool NominatedCounts(const Pod& pod, int32_t node) const;

  engine::Framework& fw_;
  const engine::PreFilterResult& pre_;
  const Pod& pod_;
  const engine::Snapshot& snapshot_;
  std::function<int32_t(const std::string&)> index_of_;
  std::vector<const Pod*> nominated_;
  std::function<std::unique_ptr<DryRunHost>()> make_reference_;
  std::unique_ptr<DryRunHost> reference_;
  // Every filter plugin's verdict now on the prefetched nodes: current_[slot_[node] * F + f].
  std::vector<int32_t> slot_;
  // The plugins the pod's PreFilter did not skip whose verdict the removed pods may change
  // (in chain order), and per prefetched slot the first of the others that rejects (F:
  // none): that verdict stands whatever is removed.
  struct Changing {
    int f;
    bool pod_dependent;  // PodDependentPreFilter: the reference answers
  };
  std::vector<Changing> changing_;
  std::vector<char> fixed_;  // per filter plugin: it runs and the removal cannot change it
  std::vector<int32_t> fixed_reject_;
  std::vector<engine::VerdictCode> current_, fetched_;
  std::vector<engine::NodeIndex> fetch_;
  std::vector<std::pair<std::pair<int, engine::VerdictCode>, bool>> rejects_;  // Rejects, by (f, code)
  int64_t calls_ = 0, delegated_ = 0;
};

}  // namespace kplace::cycle
