#include <cstdio>
#include <string>
#include <utility>

#include "kplace/cli/commands.h"
#include "kplace/cli/flags.h"
#include "kplace/model/input_file.h"
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
  std::string& tls_cert = flags.String("tls-cert", "", "TLS certificate (PEM); with --tls-key");
  std::string& tls_key = flags.String("tls-key", "", "TLS private key (PEM)");
  std::string& client_ca = flags.String("client-ca", "", "CA (PEM) that client certificates must be signed by (mutual TLS)");
  std::string& token_file = flags.String("token-file", "", "file holding the bearer token every call must send");
  std::string& metrics_listen = flags.String("metrics-listen", "", "serve Prometheus metrics (GET /metrics, plain HTTP) on HOST:PORT; default off");
  std::string& feature_gates = flags.String("feature-gates", "", "kube-scheduler feature gates to change from v1.37's defaults, e.g. OpportunisticBatching=false");
  int64_t& replicas = flags.Int("replicas", 2,
                                "copies of the state kept in step for reads and forks: dry runs, Evaluate and what-ifs run "
                                "beside each other and beside writes (each copy costs the state's memory); 0: one state, calls in turn, no forks");
  int64_t& forks_per_client = flags.Int("forks-per-client", 4, "open forks one client address may hold");
  int64_t& fork_ttl = flags.Int("fork-ttl", 60, "seconds a fork lives without a call when Fork names no ttl_seconds (at most 3600)");
  if (int rc = flags.Parse(argc, argv); rc >= 0) return rc;
  serve::ServerOptions options;
  if (replicas < 0 || replicas > 64 || forks_per_client < 1 || fork_ttl < 1 || fork_ttl > 3600) {
    std::fprintf(stderr, "kplace serve: --replicas must be 0 to 64, --forks-per-client at least 1, --fork-ttl 1 to 3600\n");
    return 2;
  }
  options.replicas = static_cast<int32_t>(replicas);
  options.forks_per_client = static_cast<int32_t>(forks_per_client);
  options.fork_ttl_seconds = fork_ttl;
  if (!ParseFeatureGates("serve", feature_gates, &options.scheduler.gates)) return 2;
  options.listen = listen;
  options.metrics_listen = metrics_listen;
  if (!ParseBackend(backend, &options.scheduler.backend)) return 2;
  if (batch < 1 || max_mb < 1 || max_mb > 2047) {
    std::fprintf(stderr, "kplace serve: --batch must be >= 1 and --max-message-mb between 1 and 2047\n");
    return 2;
  }
  options.scheduler.batch = static_cast<int32_t>(batch);
  options.max_message_bytes = static_cast<int32_t>(max_mb << 20);
  struct FileFlag {
    const char* flag;
    const std::string& path;
    std::string* into;
  };
  for (const FileFlag& f : {FileFlag{"--tls-cert", tls_cert, &options.tls_cert}, FileFlag{"--tls-key", tls_key, &options.tls_key},
                            FileFlag{"--client-ca", client_ca, &options.client_ca}, FileFlag{"--token-file", token_file, &options.token}}) {
    if (f.path.empty()) continue;
    absl::StatusOr<std::string> text = ReadInputFile(f.path);
    if (!text.ok()) {
      std::fprintf(stderr, "kplace serve: %s %s\n", f.flag, std::string(text.status().message()).c_str());
      return 2;
    }
    if (text->empty()) {
      std::fprintf(stderr, "kplace serve: %s %s: the file is empty\n", f.flag, f.path.c_str());
      return 2;
    }
    *f.into = std::move(*text);
  }
  // A token is one line: surrounding whitespace (the file's newline) is not part of it.
  const size_t first = options.token.find_first_not_of(" \t\r\n"), last = options.token.find_last_not_of(" \t\r\n");
  options.token = first == std::string::npos ? "" : options.token.substr(first, last - first + 1);
  if (!token_file.empty() && options.token.empty()) {
    std::fprintf(stderr, "kplace serve: --token-file %s: no token in it\n", token_file.c_str());
    return 2;
  }
  return serve::RunServer(options);  // checks the options first (exit 2)
}

}  // namespace kplace::cli
