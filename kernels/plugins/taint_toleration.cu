// TaintToleration on the engine: taints as per-node CSR columns of interned ids, the
// pod's tolerations compiled once per phase, Filter and Score as per-node functors.
#include <vector>

#include "kernels/backend.cuh"
#include "kplace/plugins/taint_toleration.h"

namespace kplace::KPLACE_BACKEND_NS {
namespace {

using engine::NodeIndex;
using engine::Snapshot;
using engine::VerdictCode;
using plugins::CompiledToleration;
using plugins::TaintNodeView;
using plugins::TaintTolerationParams;

constexpr char kUntoleratedReason[] = "node(s) had untolerated taint(s)";

// Per node, which effects its taints have (the Kinds bits): a node without a taint of the
// phase's effects answers without walking its entries (most nodes, and their spare room).
constexpr uint8_t kHardKind = 1;    // a NoSchedule or NoExecute taint
constexpr uint8_t kPreferKind = 2;  // a PreferNoSchedule taint

struct TaintFilterFn {
  TaintNodeView v;
  const uint8_t* kinds;
  TaintTolerationParams p;
  KPLACE_HOST_DEVICE VerdictCode operator()(int32_t i) const {
    return kinds[i] & kHardKind ? plugins::TaintTolerationFilterNode(v, p, i) : 0;
  }
};

struct TaintScoreFn {
  TaintNodeView v;
  const uint8_t* kinds;
  TaintTolerationParams p;
  KPLACE_HOST_DEVICE int64_t operator()(int32_t i) const {
    return kinds[i] & kPreferKind ? plugins::TaintTolerationScoreNode(v, p, i) : 0;
  }
};

/** A compiled toleration list in backend memory, re-uploaded only when it changes
 *  (consecutive pods of one workload share their tolerations). */
class TolerationList {
 public:
  void Set(const std::vector<CompiledToleration>& list) {
    if (uploaded_ && SameAs(list)) return;
    host_ = list;
    Upload(host_, &dev_);
    uploaded_ = true;
  }
  TaintTolerationParams Params() const {
    return TaintTolerationParams{thrust::raw_pointer_cast(dev_.data()), static_cast<int32_t>(host_.size())};
  }

 private:
  bool SameAs(const std::vector<CompiledToleration>& list) const {
    if (list.size() != host_.size()) return false;
    for (size_t j = 0; j < list.size(); ++j) {
      const CompiledToleration &a = list[j], &b = host_[j];
      if (a.value_int != b.value_int || a.key_id != b.key_id || a.value_id != b.value_id || a.op != b.op ||
          a.effect != b.effect) {
        return false;
      }
    }
    return true;
  }

  std::vector<CompiledToleration> host_;
  vector<CompiledToleration> dev_;
  bool uploaded_ = false;
};

class TaintToleration final : public engine::Plugin {
 public:
  static std::unique_ptr<engine::Plugin> Create(const PluginArgs&, const FeatureGates& gates, std::string*) {
    return std::unique_ptr<engine::Plugin>(new TaintToleration(gates.Enabled("TaintTolerationComparisonOperators")));
  }

  const char* Name() const override { return "TaintToleration"; }
  unsigned ExtensionPoints() const override {
    return kFilterPoint | kPreScorePoint | kScorePoint | kNormalizeScorePoint;
  }

  // Columns of node objects only: nothing to undo.
  bool OnUnbind(const Pod&, NodeIndex, const Snapshot&) override { return true; }
  bool FilterReadsPods() const override { return false; }
  void Prepare(const Snapshot& s) override {
    const int32_t n = s.num_nodes();
    offsets_.host.assign(n + 1, 0);
    prefer_no_schedule_ = 0;
    hard_taints_ = 0;
    key_.host.clear();
    value_.host.clear();
    effect_.host.clear();
    value_is_int_.host.clear();
    value_int_.host.clear();
    kinds_.host.assign(n, 0);
    for (NodeIndex i = 0; i < n; ++i) {
      kinds_.host[i] = Kinds(s.node(i));
      const size_t start = key_.host.size();
      // Room for a few more taints, so a node update rewrites its own entries only.
      const size_t room = s.node(i).taints.size() + kSpareTaints;
      key_.host.resize(start + room);
      value_.host.resize(start + room);
      effect_.host.resize(start + room);
      value_is_int_.host.resize(start + room);
      value_int_.host.resize(start + room);
      WriteTaints(s.node(i), start, room);
      offsets_.host[i + 1] = static_cast<int32_t>(key_.host.size());
    }
    offsets_.Upload();
    key_.Upload();
    value_.Upload();
    effect_.Upload();
    value_is_int_.Upload();
    value_int_.Upload();
    kinds_.Upload();
  }

  // A node that joins is the last: its entries go at the end.
  bool OnNodeAdd(NodeIndex node, const Snapshot& s) override {
    const size_t start = key_.host.size();
    const size_t room = s.node(node).taints.size() + kSpareTaints;
    for (size_t k = 0; k < room; ++k) {
      key_.Push(engine::kNoId);
      value_.Push(engine::kNoId);
      effect_.Push(plugins::kEffectOtherTaint);
      value_is_int_.Push(0);
      value_int_.Push(0);
    }
    offsets_.Push(static_cast<int32_t>(start + room));
    kinds_.Push(Kinds(s.node(node)));
    WriteTaints(s.node(node), start, room);
    SyncEntries(start, room);
    return true;
  }

  // The node's taints in place when they fit its room; else the layout is made again.
  bool OnNodeUpdate(NodeIndex node, const Node& old, const Snapshot& s) override {
    if (old.taints == s.node(node).taints) return true;
    const size_t start = static_cast<size_t>(offsets_.host[node]);
    const size_t room = static_cast<size_t>(offsets_.host[node + 1]) - start;
    if (s.node(node).taints.size() > room) return false;
    WriteTaints(old, start, room, /*remove=*/true);
    WriteTaints(s.node(node), start, room);
    SyncEntries(start, room);
    kinds_.Set(node, Kinds(s.node(node)));
    return true;
  }

  void StartPod(const Pod& pod, const Snapshot&) override {
    filter_.Set(Compile(pod.tolerations, plugins::kEffectNoSchedule, plugins::kEffectNoExecute));
  }

  // Without NoSchedule or NoExecute taints anywhere every node passes (most clusters' common
  // case, where the per-node walk over no taints costs more than the answer).
  void Filter(int32_t n, VerdictCode* codes) override {
    if (hard_taints_ == 0) return FillN(codes, n, VerdictCode{0});
    ForEachNode(n, codes, TaintFilterFn{View(), kinds_.ptr(), filter_.Params()});
  }
  bool FilterNodes(const NodeIndex* nodes, int32_t count, VerdictCode* codes) override {
    if (hard_taints_ == 0) {
      FillN(codes, count, VerdictCode{0});
      return true;
    }
    ForListedNodes(nodes, count, codes, TaintFilterFn{View(), kinds_.ptr(), filter_.Params()});
    return true;
  }
  // Taints are node state no bind changes.
  bool NodeLocal() const override { return true; }

  PluginStatus Verdict(VerdictCode) const override {
    return PluginStatus::Make(Code::kUnschedulableAndUnresolvable, kUntoleratedReason);
  }

  PluginStatus PreScore(const Pod& pod, const Snapshot&, const std::vector<NodeIndex>&) override {
    score_.Set(Compile(pod.tolerations, plugins::kEffectPreferNoSchedule, plugins::kEffectPreferNoSchedule));
    return PluginStatus::Success();
  }

  void Score(const NodeIndex* nodes, int32_t count, int64_t* scores) override {
    if (prefer_no_schedule_ == 0) return FillN(scores, count, int64_t{0});  // no taint to count
    ForListedNodes(nodes, count, scores, TaintScoreFn{View(), kinds_.ptr(), score_.Params()});
  }

  void NormalizeScore(int32_t count, int64_t* scores) override { DefaultNormalize(scores, count, /*reverse=*/true); }
  // With no PreferNoSchedule taint on any node every raw score is 0, which the reverse
  // normalization turns into the maximum everywhere.
  bool ConstantScore(int64_t* normalized) const override {
    if (prefer_no_schedule_ > 0) return false;
    *normalized = kMaxNodeScore;
    return true;
  }

 private:
  explicit TaintToleration(bool comparison_operators) : comparison_operators_(comparison_operators) {}

  TaintNodeView View() const {
    return TaintNodeView{offsets_.ptr(), key_.ptr(), value_.ptr(), effect_.ptr(), value_is_int_.ptr(), value_int_.ptr()};
  }

  /** Keeps the tolerations with an empty effect or one of `a`, `b` (the phase's
   *  effects), dropping those that can tolerate no taint of this snapshot. */
  std::vector<CompiledToleration> Compile(const std::vector<Toleration>& tolerations, int8_t a, int8_t b) const {
    std::vector<CompiledToleration> out;
    for (const Toleration& t : tolerations) {
      CompiledToleration c{};
      c.effect = plugins::TolerationEffectCode(t.effect);
      if (c.effect != plugins::kEffectAny && c.effect != a && c.effect != b) continue;
      if (t.key.empty()) {
        c.key_id = plugins::kAnyTaintKey;
      } else {
        c.key_id = keys_.Find(t.key);
        if (c.key_id == engine::kNoId) continue;  // no node has a taint with this key
      }
      if (t.op.empty() || t.op == "Equal") {
        c.op = plugins::TolerationOp::kEqual;
        c.value_id = values_.Find(t.value);
        if (c.value_id == engine::kNoId) continue;
      } else if (t.op == "Exists") {
        c.op = plugins::TolerationOp::kExists;
      } else if (t.op == "Lt" || t.op == "Gt") {
        if (!comparison_operators_ || !plugins::ParseCanonicalInt64(t.value, &c.value_int)) continue;
        c.op = t.op == "Lt" ? plugins::TolerationOp::kLt : plugins::TolerationOp::kGt;
      } else {
        continue;  // an unknown operator tolerates nothing
      }
      out.push_back(c);
    }
    return out;
  }

  static uint8_t Kinds(const Node& node) {
    uint8_t kinds = 0;
    for (const Taint& t : node.taints) {
      const int8_t e = plugins::TaintEffectCode(t.effect);
      if (e == plugins::kEffectNoSchedule || e == plugins::kEffectNoExecute) kinds |= kHardKind;
      if (e == plugins::kEffectPreferNoSchedule) kinds |= kPreferKind;
    }
    return kinds;
  }

  bool comparison_operators_;
  engine::Interner keys_, values_;
  Column<uint8_t> kinds_;  // per node, Kinds of its taints
  Column<int32_t> offsets_, key_, value_;
  Column<int8_t> effect_;
  Column<uint8_t> value_is_int_;
  Column<int64_t> value_int_;
  TolerationList filter_, score_;
  static constexpr size_t kSpareTaints = 2;
  // Entries [start, start + room) from the host to the backend.
  void SyncEntries(size_t start, size_t room) {
    for (size_t k = start; k < start + room; ++k) {
      key_.Set(k, key_.host[k]);
      value_.Set(k, value_.host[k]);
      effect_.Set(k, effect_.host[k]);
      value_is_int_.Set(k, value_is_int_.host[k]);
      value_int_.Set(k, value_int_.host[k]);
    }
  }
  // Writes `node`'s taints into entries [start, start + room) on the host, padded with
  // entries neither Filter nor Score reads; `remove` only takes its count of
  // PreferNoSchedule taints back.
  void WriteTaints(const Node& node, size_t start, size_t room, bool remove = false) {
    for (const Taint& t : node.taints) {
      const int8_t e = plugins::TaintEffectCode(t.effect);
      if (e == plugins::kEffectPreferNoSchedule) prefer_no_schedule_ += remove ? -1 : 1;
      if (e == plugins::kEffectNoSchedule || e == plugins::kEffectNoExecute) hard_taints_ += remove ? -1 : 1;
    }
    if (remove) return;
    for (size_t k = 0; k < room; ++k) {
      const size_t at = start + k;
      if (k >= node.taints.size()) {
        key_.host[at] = value_.host[at] = engine::kNoId;
        effect_.host[at] = plugins::kEffectOtherTaint;
        value_is_int_.host[at] = 0;
        value_int_.host[at] = 0;
        continue;
      }
      const Taint& t = node.taints[k];
      int64_t v = 0;
      const bool is_int = plugins::ParseCanonicalInt64(t.value, &v);
      key_.host[at] = keys_.Intern(t.key);
      value_.host[at] = values_.Intern(t.value);
      effect_.host[at] = plugins::TaintEffectCode(t.effect);
      value_is_int_.host[at] = is_int ? 1 : 0;
      value_int_.host[at] = is_int ? v : 0;
    }
  }
  int64_t prefer_no_schedule_ = 0;  // PreferNoSchedule taints on all nodes
  int64_t hard_taints_ = 0;         // NoSchedule and NoExecute taints on all nodes
};

KPLACE_REGISTER_ENGINE_PLUGIN(TaintToleration, TaintToleration);

}  // namespace
}  // namespace kplace::KPLACE_BACKEND_NS
