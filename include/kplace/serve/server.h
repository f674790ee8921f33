#pragma once
// `kplace serve`'s gRPC transport (proto/kplace/v1/placement.proto) over a PlacementState.
#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "kplace/cycle/scheduler.h"

namespace kplace::serve {

struct ServerOptions {
  std::string listen = "127.0.0.1:7450";
  cycle::Options scheduler;
  int32_t max_message_bytes = 256 << 20;  // larger requests are refused (RESOURCE_EXHAUSTED)
  // TLS: PEM files; with client_ca, clients must present a certificate it signed.
  std::string tls_cert, tls_key, client_ca;
  // When set, every call but health checks needs `authorization: Bearer <token>`.
  std::string token;
  // host:port of the Prometheus metrics page (plain HTTP, GET /metrics); empty: none.
  std::string metrics_listen;
};

/** @brief Checks `options` before serving: TLS needs both a certificate and a key, and any
 *  address beyond loopback (the metrics page's too) needs TLS and a token for the service.
 *  InvalidArgument saying what is missing. */
absl::Status CheckServerOptions(const ServerOptions& options);

/** Whether `address` (host:port) names the loopback interface only. */
bool IsLoopback(const std::string& address);

/** @brief Serves until SIGTERM or SIGINT, then drains in-flight calls and returns 0; 1 when
 *  it cannot listen. `ready` (may be empty) gets the bound port once it listens. */
int RunServer(const ServerOptions& options, const std::function<void(int port)>& ready = {});

}  // namespace kplace::serve
