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
