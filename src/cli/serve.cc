#include <cstdio>

#include "kplace/cli/commands.h"
#include "kplace/cli/flags.h"
#include "kplace/serve/server.h"

namespace kplace::cli {

int RunServe(int argc, char** argv) {
  Flags flags("serve",
              "Runs the placement service (gRPC kplace.v1.Placement, proto/kplace/v1/placement.proto; docs/serve.md):\n"
              "Reset a cluster, Apply watch events, Schedule pods (COMMIT or DRY_RUN), take a Snapshot. Stops on\n"
              "SIGTERM or SIGINT after the calls in flight.");
  std::string& listen = flags.String("listen", "127.0.0.1:7450", "gRPC address HOST:PORT (port 0: any free port, printed)");
  std::string& backend = flags.String("backend", "auto", "engine backend: auto, omp or cuda");
  int64_t& batch = flags.Int("batch", cycle::kDefaultBatch, "engine: up to N consecutive identical pods share one batched run");
  int64_t& max_mb = flags.Int("max-message-mb", 256, "refuse requests larger than this many MiB");
  if (int rc = flags.Parse(argc, argv); rc >= 0) return rc;
  serve::ServerOptions options;
  options.listen = listen;
  if (!ParseBackend(backend, &options.scheduler.backend)) return 2;
  if (batch < 1 || max_mb < 1 || max_mb > 2047) {
    std::fprintf(stderr, "kplace serve: --batch must be >= 1 and --max-message-mb between 1 and 2047\n");
    return 2;
  }
  options.scheduler.batch = static_cast<int32_t>(batch);
  options.max_message_bytes = static_cast<int32_t>(max_mb << 20);
  if (!serve::IsLoopback(listen)) {
    // TLS and tokens are not built yet: nothing but this machine may call.
    std::fprintf(stderr, "kplace serve: --listen %s: only loopback addresses (127.0.0.0/8, localhost, [::1]) are served until TLS and tokens exist\n",
                 listen.c_str());
    return 2;
  }
  return serve::RunServer(options);
}

}  // namespace kplace::cli
