#pragma once
// A profile's plugins that run on the host (kplace/framework/host_plugin.h), listed by
// extension point in the profile's order, and the registry that makes them.
#include <memory>
#include <string>
#include <vector>

#include "kplace/config/profile.h"
#include "kplace/framework/host_plugin.h"
#include "kplace/framework/types.h"

namespace kplace::cycle {

/** The host steps of plugin `name`; null when it has none. */
std::unique_ptr<HostPlugin> MakeHostPlugin(const std::string& name, const FeatureGates& gates);

class HostPlugins {
 public:
  /** Every plugin of `profile` with host steps, each made once. */
  static HostPlugins For(const Profile& profile, const FeatureGates& gates);

  const std::vector<HostPlugin*>& pre_enqueue() const { return pre_enqueue_; }
  const std::vector<HostPlugin*>& pre_bind() const { return pre_bind_; }
  const std::vector<HostPlugin*>& post_filter() const { return post_filter_; }
  /** Whether the profile's PostFilter preempts (DefaultPreemption, which the cycle runs
   *  after these plugins: its dry run needs the cycle's own evaluators). */
  bool preempts() const { return preempts_; }
  /** Whether some PreBind plugin writes objects when `pod` is bound. */
  bool WritesAtBind(const Pod& pod) const;
  /** PostFilter's input per post_filter() plugin after a cycle whose PreFilter rejected the
   *  pod (`code` and `rejectors`: its status and the plugins that returned it): a plugin's
   *  PreFilter ran unless an earlier plugin's UnschedulableAndUnresolvable ended the pass. */
  std::vector<HostPlugin::PostFilterInput> AfterPreFilter(const Profile& profile, Code code,
                                                          const std::vector<std::string>& rejectors) const;
  /** The same after the Filter pass (every PreFilter ran; the caller adds the nodes each
   *  plugin's Filter rejected). */
  std::vector<HostPlugin::PostFilterInput> AfterFilter() const;

 private:
  std::vector<std::unique_ptr<HostPlugin>> owned_;
  std::vector<HostPlugin*> pre_enqueue_, pre_bind_, post_filter_;
  bool preempts_ = false;
};

}  // namespace kplace::cycle
