// ImageLocality on the engine: node images as CSR rows over interned names, the pod's
// images resolved once per cycle, Score as a per-node functor.
#include <algorithm>
#include <string>
#include <unordered_map>
#include <utility>

#include "kernels/backend.cuh"
#include "kplace/plugins/image_locality.h"

namespace kplace::KPLACE_BACKEND_NS {
namespace {

using engine::NodeIndex;
using engine::Snapshot;
using plugins::ImageNodeView;
using plugins::ImagePodParams;

struct ImageScoreFn {
  ImageNodeView v;
  ImagePodParams p;
  KPLACE_HOST_DEVICE int64_t operator()(int32_t i) const { return plugins::ImageLocalityScoreNode(v, p, i); }
};

// Pod images get ":latest" when they carry no tag; node names are used verbatim.
std::string NormalizedImageName(const std::string& name) {
  size_t colon = name.rfind(':'), slash = name.rfind('/');
  long c = colon == std::string::npos ? -1 : static_cast<long>(colon);
  long s = slash == std::string::npos ? -1 : static_cast<long>(slash);
  return c <= s ? name + ":latest" : name;
}

class ImageLocality final : public engine::Plugin {
 public:
  static std::unique_ptr<engine::Plugin> Create(const PluginArgs&, const FeatureGates&, std::string*) {
    return std::unique_ptr<engine::Plugin>(new ImageLocality());
  }

  const char* Name() const override { return "ImageLocality"; }
  unsigned ExtensionPoints() const override { return kScorePoint; }

  // Columns of node objects only: nothing to undo.
  bool OnUnbind(const Pod&, NodeIndex, const Snapshot&) override { return true; }
  // Other nodes' scores read how many nodes have an image: new images build it again.
  bool OnNodeUpdate(NodeIndex node, const Node& old, const Snapshot& s) override {
    total_nodes_ = s.num_live_nodes();  // a node that leaves or comes back
    return old.images == s.node(node).images;
  }
  // A node that joins is the last row; scores read the number of nodes and of nodes with
  // each image, which the next pod's StartPod reads afresh.
  bool OnNodeAdd(NodeIndex node, const Snapshot& s) override {
    total_nodes_ = s.num_live_nodes();
    for (const auto& [id, size] : Row(s.node(node))) {
      image_ids_.Push(id);
      sizes_.Push(size);
      ++num_nodes_having_[id];
    }
    offsets_.Push(static_cast<int32_t>(image_ids_.host.size()));
    return true;
  }
  void Prepare(const Snapshot& s) override {
    ids_.clear();
    num_nodes_having_.clear();
    total_nodes_ = s.num_live_nodes();
    offsets_.host.assign(1, 0);
    image_ids_.host.clear();
    sizes_.host.clear();
    for (NodeIndex i = 0; i < s.num_nodes(); ++i) {
      for (const auto& [id, size] : Row(s.node(i))) {
        image_ids_.host.push_back(id);
        sizes_.host.push_back(size);
        ++num_nodes_having_[id];
      }
      offsets_.host.push_back(static_cast<int32_t>(image_ids_.host.size()));
    }
    offsets_.Upload();
    image_ids_.Upload();
    sizes_.Upload();
  }

  // A node's images by name id, sorted: one entry per name, a name listed twice keeps its
  // last size (the snapshot's rule).
  std::vector<std::pair<int32_t, int64_t>> Row(const Node& node) {
    std::unordered_map<int32_t, int64_t> row;
    for (const ContainerImage& image : node.images) {
      for (const std::string& name : image.names) row[Intern(name)] = image.size_bytes;
    }
    std::vector<std::pair<int32_t, int64_t>> sorted(row.begin(), row.end());
    std::sort(sorted.begin(), sorted.end());
    return sorted;
  }

  void StartPod(const Pod& pod, const Snapshot&) override {
    pod_ids_.clear();
    pod_spread_.clear();
    int32_t num_images = 0;
    auto add = [&](const std::string& image) {
      ++num_images;
      auto it = ids_.find(NormalizedImageName(image));
      if (it == ids_.end()) return;  // no node has it
      pod_ids_.push_back(it->second);
      pod_spread_.push_back(static_cast<double>(num_nodes_having_[it->second]) / static_cast<double>(total_nodes_));
    };
    for (const Container& c : pod.init_containers) add(c.image);
    for (const Container& c : pod.containers) add(c.image);
    for (const Volume& v : pod.volumes) {
      if (v.source == "image") add(v.image_reference);
    }
    Upload(pod_ids_, &pod_ids_dev_);
    Upload(pod_spread_, &pod_spread_dev_);
    params_ = ImagePodParams{Ptr(pod_ids_dev_), Ptr(pod_spread_dev_), static_cast<int32_t>(pod_ids_.size()), num_images};
  }

  void Score(const NodeIndex* nodes, int32_t count, int64_t* scores) override {
    ImageNodeView v{offsets_.ptr(), image_ids_.ptr(), sizes_.ptr()};
    ForListedNodes(nodes, count, scores, ImageScoreFn{v, params_});
  }
  // Node images never change while scheduling; the spread factor counts nodes that have an
  // image, which no bind changes either.
  bool NodeLocal() const override { return true; }

 private:
  int32_t Intern(const std::string& name) {
    auto [it, inserted] = ids_.emplace(name, static_cast<int32_t>(ids_.size()));
    return it->second;
  }

  std::unordered_map<std::string, int32_t> ids_;  // node image names, verbatim
  std::unordered_map<int32_t, int32_t> num_nodes_having_;
  int32_t total_nodes_ = 0;
  Column<int32_t> offsets_, image_ids_;
  Column<int64_t> sizes_;
  std::vector<int32_t> pod_ids_;
  std::vector<double> pod_spread_;
  vector<int32_t> pod_ids_dev_;
  vector<double> pod_spread_dev_;
  ImagePodParams params_{};
};

KPLACE_REGISTER_ENGINE_PLUGIN(ImageLocality, ImageLocality);

}  // namespace
}  // namespace kplace::KPLACE_BACKEND_NS
