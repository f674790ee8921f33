#include "kplace/cycle/host_plugins.h"

#include <algorithm>
#include <utility>

#include "kplace/plugins/dynamic_resources_common.h"
#include "kplace/plugins/scheduling_gates.h"

namespace kplace::cycle {

std::unique_ptr<HostPlugin> MakeHostPlugin(const std::string& name, const FeatureGates& gates) {
  if (name == plugins::scheduling_gates::kName) return std::make_unique<plugins::scheduling_gates::SchedulingGates>();
  if (name == plugins::dra::kName) return std::make_unique<plugins::dra::HostSteps>(gates);
  return nullptr;
}

HostPlugins HostPlugins::For(const Profile& profile, const FeatureGates& gates) {
  HostPlugins out;
  out.preempts_ = std::find(profile.post_filter.begin(), profile.post_filter.end(), "DefaultPreemption") !=
                  profile.post_filter.end();
  // PreBind is not a configured point: it runs for the plugins the profile enables at the
  // points it configures (AllPlugins); PreEnqueue and PostFilter have lists of their own.
  const std::vector<std::string> enabled = profile.AllPlugins();
  // SchedulingGates holds gated pods back in every profile, the single-plugin profiles of
  // tests and conformance cases included (a configuration that disables it is not
  // modelled): it runs first at PreEnqueue whatever the profile lists.
  std::vector<std::string> names = {plugins::scheduling_gates::kName};
  for (const std::string& name : enabled) names.push_back(name);
  for (const std::vector<std::string>* point : {&profile.pre_enqueue, &profile.post_filter}) {
    for (const std::string& name : *point) {
      if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
    }
  }
  for (const std::string& name : names) {
    std::unique_ptr<HostPlugin> p = MakeHostPlugin(name, gates);
    if (!p) continue;
    auto in = [&](const std::vector<std::string>& list) {
      return std::find(list.begin(), list.end(), name) != list.end();
    };
    if (in(profile.pre_enqueue) || name == plugins::scheduling_gates::kName) out.pre_enqueue_.push_back(p.get());
    if (in(enabled)) out.pre_bind_.push_back(p.get());
    if (in(profile.post_filter)) out.post_filter_.push_back(p.get());
    out.owned_.push_back(std::move(p));
  }
  // Each point in the profile's own order.
  auto order = [](std::vector<HostPlugin*>* list, const std::vector<std::string>& point) {
    std::stable_sort(list->begin(), list->end(), [&](const HostPlugin* a, const HostPlugin* b) {
      return std::find(point.begin(), point.end(), a->name()) < std::find(point.begin(), point.end(), b->name());
    });
  };
  std::vector<std::string> pre_enqueue = profile.pre_enqueue;
  pre_enqueue.erase(std::remove(pre_enqueue.begin(), pre_enqueue.end(), plugins::scheduling_gates::kName),
                    pre_enqueue.end());
  pre_enqueue.insert(pre_enqueue.begin(), plugins::scheduling_gates::kName);
  order(&out.pre_enqueue_, pre_enqueue);
  order(&out.post_filter_, profile.post_filter);
  return out;
}

bool HostPlugins::WritesAtBind(const Pod& pod) const {
  for (const HostPlugin* p : pre_bind_) {
    if (p->WritesAtBind(pod)) return true;
  }
  return false;
}

std::vector<HostPlugin::PostFilterInput> HostPlugins::AfterPreFilter(const Profile& profile, Code code,
                                                                      const std::vector<std::string>& rejectors) const {
  auto at = [&](const std::string& name) {
    return std::find(profile.pre_filter.begin(), profile.pre_filter.end(), name) - profile.pre_filter.begin();
  };
  // An UnschedulableAndUnresolvable PreFilter ends the pass at the plugin that returned it
  // (the last of the restricting ones when their node sets did not meet).
  std::ptrdiff_t stop = static_cast<std::ptrdiff_t>(profile.pre_filter.size());
  if (code == Code::kUnschedulableAndUnresolvable) {
    stop = -1;
    for (const std::string& r : rejectors) stop = std::max(stop, at(r));
  }
  std::vector<HostPlugin::PostFilterInput> out(post_filter_.size());
  for (size_t h = 0; h < post_filter_.size(); ++h) {
    const std::ptrdiff_t mine = at(post_filter_[h]->name());
    out[h].pre_filter_ran = mine < static_cast<std::ptrdiff_t>(profile.pre_filter.size()) && mine <= stop;
  }
  return out;
}

std::vector<HostPlugin::PostFilterInput> HostPlugins::AfterFilter() const {
  std::vector<HostPlugin::PostFilterInput> out(post_filter_.size());
  for (HostPlugin::PostFilterInput& in : out) in.pre_filter_ran = true;
  return out;
}

}  // namespace kplace::cycle
