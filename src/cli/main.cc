#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "kplace/cli/cli.h"

int main(int argc, char** argv) {
  // OpenMP reads its wait policy when its runtime loads, before main. Spinning waits make
  // every parallel region's workers compete for the cores the cycle needs (SchedulingBasic at
  // 15,000 nodes on 2 cores: 140k pods/s spinning, 228k passive), so the binary runs itself
  // again with passive waits unless the caller chose a policy. Not under valgrind: there the
  // new image would run uninstrumented (valgrind preloads its vgpreload libraries).
  const char* preload = std::getenv("LD_PRELOAD");
  const bool valgrind = preload && std::strstr(preload, "vgpreload");
  if (std::getenv("OMP_WAIT_POLICY") == nullptr && argc > 0 && !valgrind) {
    setenv("OMP_WAIT_POLICY", "passive", 1);
    setenv("KPLACE_OMP_WAIT_POLICY_DEFAULTED", "1", 1);
    execv("/proc/self/exe", argv);  // returns only when it failed: go on as we are
    unsetenv("KPLACE_OMP_WAIT_POLICY_DEFAULTED");
  }
  return kplace::cli::Main(argc, argv);
}
