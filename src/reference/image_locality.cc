// Reference ImageLocality, straight from small-plugins.md §2 (with v1.37's image volumes).
#include <map>
#include <memory>
#include <set>

#include "kplace/common/int_math.h"
#include "kplace/reference/plugin.h"

namespace kplace::reference {
namespace {

constexpr int64_t kMiB = 1024 * 1024;
constexpr int64_t kMinThreshold = 23 * kMiB;
constexpr int64_t kMaxContainerThreshold = 1000 * kMiB;

std::string Normalized(const std::string& name) {
  auto colon = name.find_last_of(':');
  auto slash = name.find_last_of('/');
  long c = colon == std::string::npos ? -1 : static_cast<long>(colon);
  long s = slash == std::string::npos ? -1 : static_cast<long>(slash);
  if (c <= s) return name + ":latest";
  return name;
}

class ImageLocality final : public Plugin {
 public:
  const char* Name() const override { return "ImageLocality"; }
  unsigned ExtensionPoints() const override { return kScorePoint; }

  // How many nodes list an image, as upstream's snapshot keeps it (ImageStateSummary
  // NumNodes): counted once per cycle, on the first Score call.
  using ImageNodeCounts = std::map<std::string, int64_t>;
  static int64_t NodesHaving(CycleState& state, const ClusterState& cluster, const std::string& name) {
    ImageNodeCounts* counts = state.Get<ImageNodeCounts>("ImageLocality/nodes-having");
    if (counts == nullptr) {
      counts = state.Put("ImageLocality/nodes-having", std::make_shared<ImageNodeCounts>());
      for (const NodeInfo& n : cluster.nodes) {
        std::set<std::string> names;
        for (const ContainerImage& im : n.node->images) names.insert(im.names.begin(), im.names.end());
        for (const std::string& image : names) ++(*counts)[image];
      }
    }
    auto it = counts->find(name);
    return it == counts->end() ? 0 : it->second;
  }

  PluginStatus Score(CycleState& state, const Pod& pod, const NodeInfo& node, const ClusterState& cluster,
                     int64_t* score) override {
    std::vector<std::string> images;
    for (const Container& c : pod.init_containers) images.push_back(c.image);
    for (const Container& c : pod.containers) images.push_back(c.image);
    for (const Volume& v : pod.volumes) {
      if (v.source == "image") images.push_back(v.image_reference);
    }
    // This node's table: name -> size, the last listing winning.
    std::map<std::string, int64_t> table;
    for (const ContainerImage& image : node.node->images) {
      for (const std::string& name : image.names) table[name] = image.size_bytes;
    }
    const int64_t total = static_cast<int64_t>(cluster.nodes.size());
    int64_t sum = 0;
    for (const std::string& image : images) {
      std::string name = Normalized(image);
      auto it = table.find(name);
      if (it == table.end()) continue;
      const int64_t having = NodesHaving(state, cluster, name);
      double spread = static_cast<double>(having) / static_cast<double>(total);
      sum = GoAdd(sum, GoFloatToInt64(static_cast<double>(it->second) * spread));
    }
    int64_t max_threshold = kMaxContainerThreshold * static_cast<int64_t>(images.size());
    if (sum < kMinThreshold) {
      sum = kMinThreshold;
    } else if (sum > max_threshold) {
      sum = max_threshold;
    }
    *score = GoMul(kMaxNodeScore, sum - kMinThreshold) / (max_threshold - kMinThreshold);
    return PluginStatus::Success();
  }
};

}  // namespace

KPLACE_REGISTER_REFERENCE_PLUGIN(ImageLocality, [](const PluginArgs&, const FeatureGates&)
                                                    -> absl::StatusOr<std::unique_ptr<Plugin>> {
  return std::make_unique<ImageLocality>();
});

}  // namespace kplace::reference
