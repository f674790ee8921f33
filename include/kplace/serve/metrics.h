#pragma once
// `kplace serve`'s metrics in Prometheus' text format (prometheus-cpp): calls by name and
// status code, their latency, pods decided, and the revision. Served on --metrics-listen.
#include <cstdint>
#include <memory>
#include <string>

namespace prometheus {
class Registry;
}  // namespace prometheus

namespace kplace::serve {

class Metrics {
 public:
  Metrics();
  ~Metrics();
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  /** One finished call: `call` (Reset, Apply, ...), its gRPC status code name, its time. */
  void ObserveCall(const std::string& call, const std::string& code, double seconds);
  /** Pods a Schedule decided: placed and not placed; `mode` COMMIT or DRY_RUN (or EVALUATE). */
  void PodsDecided(const std::string& mode, int64_t placed, int64_t unplaced);
  void SetRevision(uint64_t revision);

  std::shared_ptr<prometheus::Registry> registry() const;
  /** The exposition text a scrape gets. */
  std::string Text() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kplace::serve
