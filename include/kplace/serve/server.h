#pragma once
// `kplace serve`'s gRPC transport (proto/kplace/v1/placement.proto) over a PlacementState.
#include <cstdint>
#include <functional>
#include <string>

#include "kplace/cycle/scheduler.h"

namespace kplace::serve {

struct ServerOptions {
  std::string listen = "127.0.0.1:7450";
  cycle::Options scheduler;
  int32_t max_message_bytes = 256 << 20;  // larger requests are refused (RESOURCE_EXHAUSTED)
};

/** Whether `address` (host:port) names the loopback interface only. */
bool IsLoopback(const std::string& address);

/** @brief Serves until SIGTERM or SIGINT, then drains in-flight calls and returns 0; 1 when
 *  it cannot listen. `ready` (may be empty) gets the bound port once it listens. */
int RunServer(const ServerOptions& options, const std::function<void(int port)>& ready = {});

}  // namespace kplace::serve
