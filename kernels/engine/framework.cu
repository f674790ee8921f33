// The per-pod framework, compiled once per backend.
#include <algorithm>

#include "kernels/backend.cuh"
#include "kplace/engine/framework.h"

namespace kplace::KPLACE_BACKEND_NS {
namespace {

using engine::FilterResult;
using engine::NodeIndex;
using engine::PluginPreFilter;
using engine::PreFilterResult;
using engine::ScoreResult;
using engine::VerdictCode;

// Keeps the first failure per node: a plugin later in Filter order only fills nodes
// that every earlier plugin passed.
struct FirstFailureFn {
  int16_t plugin;
  KPLACE_HOST_DEVICE thrust::tuple<int16_t, VerdictCode> operator()(
      const thrust::tuple<int16_t, VerdictCode>& prev, VerdictCode code) const {
    if (thrust::get<0>(prev) != 0 || code == 0) return prev;
    return thrust::make_tuple(plugin, code);
  }
};

struct AddWeightedFn {
  int64_t weight;
  KPLACE_HOST_DEVICE int64_t operator()(int64_t total, int64_t s) const { return total + weight * s; }
};

class BackendFramework final : public engine::Framework {
 public:
  BackendFramework(const Profile& profile, const FeatureGates& gates) : profile_(profile), gates_(gates) {}

  bool Init(std::string* error) {
    for (const std::string& name : profile_.AllPlugins()) {
      auto plugin = engine::MakePlugin(KPLACE_BACKEND_ID, name, profile_.args, gates_, error);
      if (!plugin) return false;
      by_name_.emplace_back(name, std::move(plugin));
    }
    for (const auto& n : profile_.pre_filter) pre_filter_.push_back(Find(n));
    for (const auto& n : profile_.filter) filter_.push_back(Find(n));
    for (const auto& n : profile_.pre_score) pre_score_.push_back(Find(n));
    for (const auto& w : profile_.score) score_.push_back(Find(w.name));
    return true;
  }

  engine::Backend backend() const override { return KPLACE_BACKEND_ID; }
  const Profile& profile() const override { return profile_; }
  const std::vector<std::string>& filter_plugins() const override { return profile_.filter; }

  void Prepare(const engine::Snapshot& snapshot) override {
    snapshot_ = &snapshot;
    for (auto& [name, plugin] : by_name_) plugin->Prepare(snapshot);
  }

  PreFilterResult PreFilter(const Pod& pod) override {
    StartPod(pod);
    PreFilterResult out;
    out.skip_filter.assign(filter_.size(), false);
    std::vector<std::string> skipped;
    for (size_t i = 0; i < pre_filter_.size(); ++i) {
      engine::Plugin* p = pre_filter_[i];
      std::vector<NodeIndex> nodes;
      bool restricts = false;
      PluginStatus s = p->PreFilter(pod, *snapshot_, &nodes, &restricts);
      if (s.IsSkip()) {
        skipped.push_back(p->Name());
        continue;
      }
      if (s.code == Code::kUnschedulableAndUnresolvable) {
        out.status = s;
        out.failed_plugin = p->Name();
        break;
      }
      if (s.code == Code::kUnschedulable) {
        out.status = s;  // a later Unschedulable replaces an earlier one; keep going
        out.failed_plugin = p->Name();
        continue;
      }
      if (!s.IsSuccess()) {
        out.status = PluginStatus::Error("running PreFilter plugin \"" + std::string(p->Name()) + "\": " + s.Message());
        out.failed_plugin = p->Name();
        break;
      }
      if (restricts) {
        std::sort(nodes.begin(), nodes.end());
        if (!out.restricted) {
          out.allowed = std::move(nodes);
        } else {
          std::vector<NodeIndex> both;
          std::set_intersection(out.allowed.begin(), out.allowed.end(), nodes.begin(), nodes.end(),
                                std::back_inserter(both));
          out.allowed = std::move(both);
        }
        out.restricted = true;
        out.restricting_plugins.push_back(p->Name());
        if (out.allowed.empty()) {
          std::vector<std::string> names = out.restricting_plugins;
          std::sort(names.begin(), names.end());
          std::string msg;
          if (names.size() == 1) {
            msg = "node(s) didn't satisfy plugin " + names[0];
          } else {
            msg = "node(s) didn't satisfy plugin(s) [";
            for (size_t k = 0; k < names.size(); ++k) msg += (k ? " " : "") + names[k];
            msg += "] simultaneously";
          }
          out.status = PluginStatus::Make(Code::kUnschedulableAndUnresolvable, msg);
          out.failed_plugin.clear();
          break;
        }
      }
    }
    for (size_t f = 0; f < filter_.size(); ++f) {
      out.skip_filter[f] =
          std::find(skipped.begin(), skipped.end(), std::string(filter_[f]->Name())) != skipped.end();
    }
    return out;
  }

  std::vector<PluginPreFilter> PreFilterEach(const Pod& pod) override {
    StartPod(pod);
    std::vector<PluginPreFilter> out;
    out.reserve(pre_filter_.size());
    for (engine::Plugin* p : pre_filter_) {
      PluginPreFilter one;
      one.plugin = p->Name();
      one.status = p->PreFilter(pod, *snapshot_, &one.nodes, &one.restricts);
      if (!one.restricts) one.nodes.clear();
      std::sort(one.nodes.begin(), one.nodes.end());
      out.push_back(std::move(one));
    }
    return out;
  }

  FilterResult Filter(const PreFilterResult& pre) override {
    const int32_t n = snapshot_->num_nodes();
    failed_.assign(n, int16_t{0});
    code_.assign(n, VerdictCode{0});
    codes_.resize(n);
    auto first = thrust::make_zip_iterator(thrust::make_tuple(failed_.begin(), code_.begin()));
    for (size_t f = 0; f < filter_.size(); ++f) {
      if (pre.skip_filter[f]) continue;
      filter_[f]->Filter(n, Ptr(codes_));
      thrust::transform(policy(), first, first + n, codes_.begin(), first,
                        FirstFailureFn{static_cast<int16_t>(f + 1)});
    }
    FilterResult out;
    out.failed_plugin.resize(n);
    out.code.resize(n);
    thrust::copy(failed_.begin(), failed_.end(), out.failed_plugin.begin());
    thrust::copy(code_.begin(), code_.end(), out.code.begin());
    return out;
  }

  std::vector<std::vector<VerdictCode>> FilterEach() override {
    const int32_t n = snapshot_->num_nodes();
    codes_.resize(n);
    std::vector<std::vector<VerdictCode>> out(filter_.size(), std::vector<VerdictCode>(n));
    for (size_t f = 0; f < filter_.size(); ++f) {
      filter_[f]->Filter(n, Ptr(codes_));
      thrust::copy(codes_.begin(), codes_.end(), out[f].begin());
    }
    return out;
  }

  PluginStatus Verdict(int plugin, VerdictCode code) const override {
    return filter_[plugin]->Verdict(code);
  }

  ScoreResult Score(const std::vector<NodeIndex>& feasible) override {
    ScoreResult out;
    const int32_t count = static_cast<int32_t>(feasible.size());
    out.skipped.assign(score_.size(), false);
    out.raw.assign(score_.size(), std::vector<int64_t>(count, 0));
    out.normalized = out.raw;
    out.total.assign(count, 0);
    out.pre_score_status.assign(pre_score_.size(), PluginStatus::Success());
    for (size_t i = 0; i < pre_score_.size(); ++i) {
      engine::Plugin* p = pre_score_[i];
      PluginStatus s = p->PreScore(*pod_, *snapshot_, feasible);
      out.pre_score_status[i] = s;
      if (s.IsSkip()) {
        for (size_t k = 0; k < score_.size(); ++k) {
          if (score_[k] == p) out.skipped[k] = true;
        }
        continue;
      }
      if (!s.IsSuccess()) {
        out.status = PluginStatus::Error("running PreScore plugin \"" + std::string(p->Name()) + "\": " + s.Message());
        return out;
      }
    }
    Upload(feasible, &nodes_);
    scores_.resize(count);
    total_.assign(count, int64_t{0});
    for (size_t k = 0; k < score_.size(); ++k) {
      if (out.skipped[k]) continue;
      score_[k]->Score(Ptr(nodes_), count, Ptr(scores_));
      thrust::copy(scores_.begin(), scores_.end(), out.raw[k].begin());
      score_[k]->NormalizeScore(count, Ptr(scores_));
      thrust::copy(scores_.begin(), scores_.end(), out.normalized[k].begin());
      thrust::transform(policy(), total_.begin(), total_.end(), scores_.begin(), total_.begin(),
                        AddWeightedFn{profile_.score[k].weight});
    }
    thrust::copy(total_.begin(), total_.end(), out.total.begin());
    return out;
  }

  void Bind(const Pod& pod, NodeIndex node) override {
    // The controller owns the snapshot; it records the pod before notifying plugins.
    for (auto& [name, plugin] : by_name_) plugin->OnBind(pod, node, *snapshot_);
  }

 private:
  void StartPod(const Pod& pod) {
    pod_ = &pod;
    for (auto& [name, plugin] : by_name_) plugin->StartPod(pod, *snapshot_);
  }

  engine::Plugin* Find(const std::string& name) {
    for (auto& [n, p] : by_name_) {
      if (n == name) return p.get();
    }
    return nullptr;
  }

  Profile profile_;
  FeatureGates gates_;
  const engine::Snapshot* snapshot_ = nullptr;
  const Pod* pod_ = nullptr;
  std::vector<std::pair<std::string, std::unique_ptr<engine::Plugin>>> by_name_;
  std::vector<engine::Plugin*> pre_filter_, filter_, pre_score_, score_;
  vector<int16_t> failed_;
  vector<VerdictCode> code_, codes_;
  vector<NodeIndex> nodes_;
  vector<int64_t> scores_, total_;
};

}  // namespace

std::unique_ptr<engine::Framework> MakeFramework(const Profile& profile, const FeatureGates& gates,
                                                 std::string* error) {
  auto fw = std::make_unique<BackendFramework>(profile, gates);
  if (!fw->Init(error)) return nullptr;
  return fw;
}

}  // namespace kplace::KPLACE_BACKEND_NS
