#pragma once
// The extension points a plugin implements on the host, around the engine's Filter and
// Score: PreEnqueue, PreBind and PostFilter, as upstream's framework calls them. A plugin
// with such steps (DynamicResources' claims) keeps them here, so the cycle runs every
// profile's plugins the same way and names none of them.
#include <memory>
#include <string>
#include <vector>

#include "kplace/framework/types.h"
#include "kplace/model/objects.h"

namespace kplace {

class HostPlugin {
 public:
  /** What PostFilter learns of the failed cycle. */
  struct PostFilterInput {
    bool pre_filter_ran = false;          // the plugin's PreFilter ran for the pod
    std::vector<const Node*> rejected;    // nodes its Filter rejected
  };

  virtual ~HostPlugin() = default;
  virtual const std::string& name() const = 0;
  /** PreEnqueue: anything but Success holds the pod back; no cycle runs for it. */
  virtual PluginStatus PreEnqueue(const Pod& /*pod*/, const ObjectSet& /*objects*/) { return PluginStatus::Success(); }
  /** Whether binding `pod` makes PreBind write objects: such a pod changes what later pods
   *  see beyond its node, so it is scheduled on its own, never in a batched run. */
  virtual bool WritesAtBind(const Pod& /*pod*/) const { return false; }
  /** PreBind for `pod`, about to be bound: the objects the binding writes (`*writes`:
   *  ResourceClaim updates the cycle applies once the pod is bound). A rejection or Error fails the
   *  binding; the pod is not bound. */
  virtual PluginStatus PreBind(const Pod& /*pod*/, const ObjectSet& /*objects*/, ObjectSet* /*writes*/) {
    return PluginStatus::Success();
  }
  /** PostFilter after a failed cycle: Unschedulable lets the next PostFilter plugin run,
   *  anything else answers. `*writes`: ResourceClaims it updates (applied whatever it answers). */
  virtual PluginStatus PostFilter(const Pod& /*pod*/, const ObjectSet& /*objects*/, const PostFilterInput& /*in*/,
                                  ObjectSet* /*writes*/) {
    return PluginStatus::Make(Code::kUnschedulable, "");
  }
};

}  // namespace kplace
