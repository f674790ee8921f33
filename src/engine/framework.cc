#include "kplace/engine/framework.h"

#if defined(KPLACE_HAVE_CUDA)
#include <cuda_runtime_api.h>
#endif

namespace kplace {
namespace omp {
std::unique_ptr<engine::Framework> MakeFramework(const Profile&, const FeatureGates&, std::string*);
}
namespace cuda {
std::unique_ptr<engine::Framework> MakeFramework(const Profile&, const FeatureGates&, std::string*);
}

namespace engine {

bool CountRejection(const Framework& fw, int16_t plugin, VerdictCode code, Scan* scan) {
  for (Rejection& r : scan->rejected) {
    if (r.plugin == plugin && r.code == code) {
      ++r.count;
      return true;
    }
  }
  scan->rejected.push_back(Rejection{plugin, code, fw.Verdict(plugin - 1, code), 1});
  scan->error = scan->rejected.back().status.code == Code::kError;
  return !scan->error;
}

bool CudaAvailable() {
#if defined(KPLACE_HAVE_CUDA)
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
#else
  return false;
#endif
}

std::unique_ptr<Framework> Framework::Create(Backend backend, const Profile& profile,
                                             const FeatureGates& gates, std::string* error) {
  if (backend == Backend::kCuda) {
#if defined(KPLACE_HAVE_CUDA)
    if (!CudaAvailable()) {
      *error = "the cuda backend was requested but no CUDA device is visible";
      return nullptr;
    }
    return cuda::MakeFramework(profile, gates, error);
#else
    *error = "this kplace was built without the cuda backend";
    return nullptr;
#endif
  }
  return omp::MakeFramework(profile, gates, error);
}

}  // namespace engine
}  // namespace kplace
