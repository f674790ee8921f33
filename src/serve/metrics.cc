#include "kplace/serve/metrics.h"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

namespace kplace::serve {

struct Metrics::Impl {
  std::shared_ptr<prometheus::Registry> registry = std::make_shared<prometheus::Registry>();
  prometheus::Family<prometheus::Counter>& calls =
      prometheus::BuildCounter().Name("kplace_requests_total").Help("Calls to kplace.v1.Placement by call and status code.").Register(*registry);
  prometheus::Family<prometheus::Histogram>& latency = prometheus::BuildHistogram()
                                                           .Name("kplace_request_duration_seconds")
                                                           .Help("Time to answer a call, lock wait included.")
                                                           .Register(*registry);
  prometheus::Family<prometheus::Counter>& pods =
      prometheus::BuildCounter().Name("kplace_pods_total").Help("Pods decided by Schedule and Evaluate, by mode and result.").Register(*registry);
  prometheus::Gauge& revision = prometheus::BuildGauge()
                                    .Name("kplace_revision")
                                    .Help("The state's revision: every Reset, Apply and committed Schedule moves it on.")
                                    .Register(*registry)
                                    .Add({});
};

Metrics::Metrics() : impl_(std::make_unique<Impl>()) {}
Metrics::~Metrics() = default;

void Metrics::ObserveCall(const std::string& call, const std::string& code, double seconds) {
  impl_->calls.Add({{"call", call}, {"code", code}}).Increment();
  // 50 us to 10 s: a one-pod dry run sits near the bottom, a Reset of a large dump at the top.
  static const prometheus::Histogram::BucketBoundaries kBuckets = {0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                                                   0.01,    0.025,  0.05,    0.1,    0.25,  0.5,    1,
                                                                   2.5,     5,      10};
  impl_->latency.Add({{"call", call}}, kBuckets).Observe(seconds);
}

void Metrics::PodsDecided(const std::string& mode, int64_t placed, int64_t unplaced) {
  impl_->pods.Add({{"mode", mode}, {"result", "placed"}}).Increment(static_cast<double>(placed));
  impl_->pods.Add({{"mode", mode}, {"result", "unplaced"}}).Increment(static_cast<double>(unplaced));
}

void Metrics::SetRevision(uint64_t revision) { impl_->revision.Set(static_cast<double>(revision)); }

std::shared_ptr<prometheus::Registry> Metrics::registry() const { return impl_->registry; }

std::string Metrics::Text() const { return prometheus::TextSerializer().Serialize(impl_->registry->Collect()); }

}  // namespace kplace::serve
