// `kplace bench --through serve`: a workload's measured pods scheduled in process and then
// through a real `kplace serve` over loopback, from the same state, to put the API's cost
// beside the cycle's and to check that the service decides as the engine does.
#include "src/cli/bench_serve.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <grpcpp/grpcpp.h>
#include <nlohmann/json.hpp>

#include "kplace/common/strings.h"
#include "kplace/model/decode.h"
#include "kplace/serve/placement_state.h"
#include "kplace/serve/server.h"
#include "kplace/v1/placement.grpc.pb.h"

namespace kplace::cli {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

std::string ListText(std::vector<json>::const_iterator begin, std::vector<json>::const_iterator end) {
  json items = json::array();
  for (auto it = begin; it != end; ++it) items.push_back(*it);
  return json{{"apiVersion", "v1"}, {"kind", "List"}, {"items", std::move(items)}}.dump();
}

}  // namespace

int RunThroughServe(const bench::Workload& w, const bench::BenchOptions& options, int64_t request_pods) {
  const std::string name = StrCat(w.name, "/", w.variant);
  if (w.churn || w.delete_pods) {
    std::fprintf(stderr, "kplace bench: %s: --through serve does not drive churn or deletePods yet\n", name.c_str());
    return 1;
  }
  auto prep = bench::PreparePhase(w, options);
  if (!prep.ok()) {
    std::fprintf(stderr, "kplace bench: %s: %s\n", name.c_str(), std::string(prep.status().message()).c_str());
    return 1;
  }
  if (!prep->missing_plugins.empty()) {
    std::fprintf(stderr, "kplace bench: %s: --through serve needs every default plugin (the service runs the default profile)\n",
                 name.c_str());
    return 1;
  }
  // The queue: the pods the init phase left pending, then the measured pods.
  std::vector<Pod> queue = prep->phase.carried;
  queue.insert(queue.end(), prep->measured.begin(), prep->measured.end());

  // In process: a scheduler over the prepared state, as the measured phase of `kplace bench`.
  auto scheduler = cycle::Scheduler::Create(prep->cluster, prep->config, prep->engine_options);
  if (!scheduler.ok()) {
    std::fprintf(stderr, "kplace bench: %s: %s\n", name.c_str(), std::string(scheduler.status().message()).c_str());
    return 1;
  }
  auto start = Clock::now();
  const std::vector<cycle::Placement> local = (*scheduler)->ScheduleAll(queue);
  const double local_seconds = Seconds(Clock::now() - start);
  scheduler->reset();

  // The same state as a client sends it: the cluster's objects, the init pods bound where
  // the engine put them, and the queue in requests of `request_pods`.
  auto cluster = bench::ClusterList(w);
  if (!cluster.ok()) {
    std::fprintf(stderr, "kplace bench: %s: %s\n", name.c_str(), std::string(cluster.status().message()).c_str());
    return 1;
  }
  std::unordered_map<std::string, std::string> node_of;
  for (const Pod& p : prep->cluster.pods) node_of[ObjectKey(p.meta)] = p.node_name;
  std::vector<json> queued;  // as `queue`: the init pods left pending, then the measured pods
  int64_t creation = 0;
  for (size_t g = 0; g < w.init.size(); ++g) {
    for (json& pod : bench::PodObjects(w.init[g], StrCat("init", g), creation)) {
      const std::string key = StrCat(pod["metadata"]["namespace"].get<std::string>(), "/", pod["metadata"]["name"].get<std::string>());
      auto it = node_of.find(key);
      if (it == node_of.end()) {
        queued.push_back(std::move(pod));
        continue;
      }
      pod["spec"]["nodeName"] = it->second;
      (*cluster)["items"].push_back(std::move(pod));
    }
    creation += w.init[g].count;
  }
  for (json& pod : bench::PodObjects(w.measured, "pod", prep->measured_first_creation)) queued.push_back(std::move(pod));
  const std::string cluster_text = cluster->dump();
  std::vector<std::string> requests;
  const size_t step = static_cast<size_t>(std::max<int64_t>(1, request_pods));
  for (size_t at = 0; at < queued.size(); at += step) {
    requests.push_back(ListText(queued.begin() + at, queued.begin() + std::min(queued.size(), at + step)));
  }

  serve::ServerOptions server_options;
  server_options.listen = "127.0.0.1:0";
  server_options.scheduler = prep->engine_options;
  auto server = serve::LocalServer::Start(server_options);
  if (!server.ok()) {
    std::fprintf(stderr, "kplace bench: --through serve: %s\n", std::string(server.status().message()).c_str());
    return 1;
  }
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(server_options.max_message_bytes);
  args.SetMaxSendMessageSize(server_options.max_message_bytes);
  auto channel = grpc::CreateCustomChannel(StrCat("127.0.0.1:", (*server)->port()), grpc::InsecureChannelCredentials(), args);
  auto stub = v1::Placement::NewStub(channel);
  // One call's status: false (and said) when it failed.
  const auto ok = [](const char* call, const grpc::Status& s) {
    if (!s.ok()) std::fprintf(stderr, "kplace bench: --through serve: %s: %s\n", call, s.error_message().c_str());
    return s.ok();
  };
  v1::ResetRequest reset;
  reset.set_objects(cluster_text);
  v1::ResetResponse reset_reply;
  const auto reset_server = [&] {
    grpc::ClientContext ctx;
    return ok("Reset", stub->Reset(&ctx, reset, &reset_reply));
  };
  auto reset_start = Clock::now();
  if (!reset_server()) return 1;
  const double reset_seconds = Seconds(Clock::now() - reset_start);
  std::vector<v1::PodPlacement> remote;
  remote.reserve(queue.size());
  start = Clock::now();
  for (const std::string& text : requests) {
    v1::ScheduleRequest req;
    req.set_pods(text);
    req.set_mode(v1::COMMIT);
    v1::ScheduleResponse reply;
    grpc::ClientContext ctx;
    if (!ok("Schedule", stub->Schedule(&ctx, req, &reply))) return 1;
    for (v1::PodPlacement& p : *reply.mutable_placements()) remote.push_back(std::move(p));
  }
  const double remote_seconds = Seconds(Clock::now() - start);

  // Apply: the placed pods again, as the bound-pod ADDED events a watch would carry, into the
  // state before them: in process through serve::PlacementState (the service without its
  // transport), then through the service, in calls of `request_pods` events.
  std::vector<std::string> events;
  for (size_t k = 0; k < local.size() && k < queued.size(); ++k) {
    if (local[k].node.empty()) continue;
    json pod = queued[k];
    pod["spec"]["nodeName"] = local[k].node;
    events.push_back(json{{"type", "ADDED"}, {"object", std::move(pod)}}.dump());
  }
  serve::PlacementState state(prep->engine_options);
  if (auto r = state.Reset(cluster_text, ""); !r.ok()) {
    std::fprintf(stderr, "kplace bench: --through serve: in-process Reset: %s\n", std::string(r.status().message()).c_str());
    return 1;
  }
  start = Clock::now();
  for (size_t at = 0; at < events.size(); at += step) {
    const std::vector<std::string_view> views(events.begin() + at, events.begin() + std::min(events.size(), at + step));
    if (auto r = state.Apply(views, std::nullopt); !r.ok()) {
      std::fprintf(stderr, "kplace bench: --through serve: in-process Apply: %s\n", std::string(r.status().message()).c_str());
      return 1;
    }
  }
  const double local_apply_seconds = Seconds(Clock::now() - start);
  if (!reset_server()) return 1;
  std::vector<v1::ApplyRequest> applies;
  for (size_t at = 0; at < events.size(); at += step) {
    applies.emplace_back();
    for (size_t k = at; k < std::min(events.size(), at + step); ++k) applies.back().add_events(events[k]);
  }
  start = Clock::now();
  for (const v1::ApplyRequest& req : applies) {
    v1::ApplyResponse reply;
    grpc::ClientContext ctx;
    if (!ok("Apply", stub->Apply(&ctx, req, &reply))) return 1;
  }
  const double remote_apply_seconds = Seconds(Clock::now() - start);
  // Both sides hold the same pods afterwards.
  v1::SnapshotResponse snap;
  {
    grpc::ClientContext ctx;
    if (!ok("Snapshot", stub->Snapshot(&ctx, v1::SnapshotRequest(), &snap))) return 1;
  }
  const bool same_state = json::parse(snap.objects()) == state.Snapshot();
  (*server)->Stop();

  // The service must decide as the engine does, pod for pod.
  int64_t differ = 0;
  std::string first;
  if (remote.size() != local.size()) {
    differ = static_cast<int64_t>(std::max(remote.size(), local.size()));
    first = StrCat(remote.size(), " placements through the service, ", local.size(), " in process");
  }
  for (size_t k = 0; differ == 0 && k < local.size(); ++k) {
    if (remote[k].pod() != local[k].pod || remote[k].node() != local[k].node || remote[k].message() != local[k].message) {
      if (differ++ == 0) {
        first = StrCat(local[k].pod, ": in process \"", local[k].node.empty() ? local[k].message : local[k].node,
                       "\", through the service ", remote[k].pod(), " \"",
                       remote[k].node().empty() ? remote[k].message() : remote[k].node(), "\"");
      }
    }
  }
  int64_t placed = 0;
  for (const cycle::Placement& p : local) placed += !p.node.empty();
  const double pods = static_cast<double>(queue.size());
  const double local_rate = local_seconds > 0 ? pods / local_seconds : 0;
  const double remote_rate = remote_seconds > 0 ? pods / remote_seconds : 0;
  std::printf("%s through serve: %d nodes, %lld init pods bound, %zu pods queued (%lld placed) in %zu Schedule "
              "request(s) of up to %lld pods, COMMIT, over loopback\n",
              name.c_str(), reset_reply.nodes(), static_cast<long long>(reset_reply.bound_pods()), queue.size(),
              static_cast<long long>(placed), requests.size(), static_cast<long long>(step));
  std::printf("  in process:         %10.1f pods/s (%.3f s; Scheduler::ScheduleAll on the same state)\n", local_rate,
              local_seconds);
  std::printf("  through the service:%10.1f pods/s (%.3f s end to end: request bytes built before the clock; "
              "Reset %.3f s before it)\n",
              remote_rate, remote_seconds, reset_seconds);
  std::printf("  service / in process: %.0f%%; placements %s\n", local_rate > 0 ? 100 * remote_rate / local_rate : 0.0,
              differ == 0 ? StrCat("identical (", local.size(), " pods: node and message)").c_str()
                          : StrCat("DIFFER in ", differ, "; first: ", first).c_str());
  const double n_events = static_cast<double>(events.size());
  std::printf("  Apply of the %zu placed pods as bound-pod ADDED events, calls of up to %lld: in process (PlacementState) "
              "%.1f events/s, through the service %.1f events/s (%.0f%%); Snapshots %s\n",
              events.size(), static_cast<long long>(step), local_apply_seconds > 0 ? n_events / local_apply_seconds : 0.0,
              remote_apply_seconds > 0 ? n_events / remote_apply_seconds : 0.0,
              remote_apply_seconds > 0 ? 100 * local_apply_seconds / remote_apply_seconds : 0.0,
              same_state ? "identical" : "DIFFER");
  return differ == 0 && same_state ? 0 : 1;
}

}  // namespace kplace::cli
