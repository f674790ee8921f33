#pragma once
// `kplace serve`'s gRPC transport (proto/kplace/v1/placement.proto) over a PlacementState.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kplace/cycle/scheduler.h"

namespace kplace::serve {

struct ServerOptions {
  std::string listen = "127.0.0.1:7450";
  cycle::Options scheduler;
  int32_t max_message_bytes = 256 << 20;  // larger requests are refused (RESOURCE_EXHAUSTED)
  // TLS: PEM files; with client_ca, clients must present a certificate it signed.
  std::string tls_cert, tls_key, client_ca;
  // When set, every call but health checks and reflection needs `authorization: Bearer <token>`
  // (the scheme in any case, as RFC 7235 has it).
  std::string token;
  // host:port of the Prometheus metrics page (plain HTTP, GET /metrics); empty: none.
  std::string metrics_listen;
  // States kept beside the primary for reads and forks (serve::StatePool); 0: every call
  // on the one state, in turn, and no forks.
  int32_t replicas = 2;
  int32_t forks_per_client = 4;    // open forks one client address may hold
  int64_t fork_ttl_seconds = 60;   // a fork's idle lifetime when the Fork call names none
};

/** @brief Checks `options` before serving: addresses are HOST:PORT with a port from 0 to
 *  65535, TLS needs both a certificate and a key, and any address beyond loopback (the
 *  metrics page's too) needs TLS and a token for the service. InvalidArgument saying what
 *  is wrong. */
absl::Status CheckServerOptions(const ServerOptions& options);

/** Whether `address` (host:port) names the loopback interface only. */
bool IsLoopback(const std::string& address);

/** Whether an `authorization` header value carries `token` under the Bearer scheme (the
 *  scheme matched in any case; the token compared in constant time). */
bool BearerTokenIs(std::string_view header, std::string_view token);

/** A server running in this process on its own threads until Stop (or destruction), which
 *  drains in-flight calls: `kplace bench --through serve` and RunServer stand on it. */
class LocalServer {
 public:
  /** @brief Checks `options` (CheckServerOptions) and starts listening: InvalidArgument for
   *  options refused, Unavailable when it cannot listen. */
  static absl::StatusOr<std::unique_ptr<LocalServer>> Start(const ServerOptions& options);
  ~LocalServer();
  LocalServer(const LocalServer&) = delete;
  LocalServer& operator=(const LocalServer&) = delete;

  /** The bound gRPC port (the one asked for, or the one picked for port 0). */
  int port() const;
  /** The metrics page's bound port; 0 without one. */
  int metrics_port() const { return metrics_port_; }
  void Stop();

 private:
  LocalServer() = default;
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int metrics_port_ = 0;
};

/** @brief Serves until SIGTERM or SIGINT, then drains in-flight calls and returns 0; 1 when
 *  it cannot listen. `ready` (may be empty) gets the bound port once it listens. */
int RunServer(const ServerOptions& options, const std::function<void(int port)>& ready = {});

}  // namespace kplace::serve
