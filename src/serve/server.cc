#include "kplace/serve/server.h"

#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <memory>

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <prometheus/exposer.h>
#include <prometheus/registry.h>

#include "kplace/common/status.h"
#include "kplace/common/strings.h"
#include "kplace/framework/types.h"
#include "kplace/serve/metrics.h"
#include "kplace/serve/placement_state.h"
#include "kplace/serve/state_pool.h"
#include "kplace/v1/placement.grpc.pb.h"
#include "src/serve/chunks.h"

namespace kplace::serve {
namespace {

grpc::Status ToGrpc(const absl::Status& s) {
  grpc::StatusCode code = grpc::StatusCode::INTERNAL;
  switch (s.code()) {
    case absl::StatusCode::kOk:
      return grpc::Status::OK;
    case absl::StatusCode::kNotFound:
      if (IsUnknownFork(s)) return grpc::Status(grpc::StatusCode::NOT_FOUND, std::string(s.message()));
      [[fallthrough]];
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kAlreadyExists:
      code = grpc::StatusCode::INVALID_ARGUMENT;  // about the request's objects
      break;
    case absl::StatusCode::kFailedPrecondition:
      code = grpc::StatusCode::FAILED_PRECONDITION;
      break;
    case absl::StatusCode::kResourceExhausted:
      code = grpc::StatusCode::RESOURCE_EXHAUSTED;
      break;
    default:
      break;
  }
  return grpc::Status(code, std::string(s.message()));
}

template <typename Request>
Precondition Expected(const Request& req) {
  return Precondition(req.has_expected_revision() ? std::optional<uint64_t>(req.expected_revision()) : std::nullopt,
                      req.expected_instance());
}

const char* GrpcCodeName(grpc::StatusCode c) {
  switch (c) {
    case grpc::StatusCode::OK: return "OK";
    case grpc::StatusCode::CANCELLED: return "CANCELLED";
    case grpc::StatusCode::INVALID_ARGUMENT: return "INVALID_ARGUMENT";
    case grpc::StatusCode::FAILED_PRECONDITION: return "FAILED_PRECONDITION";
    case grpc::StatusCode::NOT_FOUND: return "NOT_FOUND";
    case grpc::StatusCode::UNAUTHENTICATED: return "UNAUTHENTICATED";
    case grpc::StatusCode::RESOURCE_EXHAUSTED: return "RESOURCE_EXHAUSTED";
    case grpc::StatusCode::INTERNAL: return "INTERNAL";
    default: return "OTHER";
  }
}

int64_t Placed(const std::vector<cycle::Placement>& placements) {
  int64_t n = 0;
  for (const cycle::Placement& p : placements) n += !p.node.empty();
  return n;
}

// Writes apply to the state one at a time, in revision order; reads (dry runs, Evaluate,
// what-ifs) run on replicas kept in step, beside each other and beside writes, each at one
// revision; a call naming a fork runs on the fork (StatePool).
class PlacementService final : public v1::Placement::Service {
 public:
  PlacementService(const ServerOptions& o, Metrics* metrics)
      : pool_(o.scheduler, o.replicas,
              ForkLimits{o.forks_per_client, std::chrono::seconds(o.fork_ttl_seconds), std::chrono::seconds(3600)}),
        token_(o.token),
        max_message_bytes_(o.max_message_bytes),
        metrics_(metrics) {}

  grpc::Status Reset(grpc::ServerContext* ctx, const v1::ResetRequest* req, v1::ResetResponse* resp) override {
    return Observed("Reset", [&] { return DoReset(ctx, req, resp); });
  }
  grpc::Status Apply(grpc::ServerContext* ctx, const v1::ApplyRequest* req, v1::ApplyResponse* resp) override {
    return Observed("Apply", [&] { return DoApply(ctx, req, resp); });
  }
  grpc::Status ApplyStream(grpc::ServerContext* ctx, grpc::ServerReader<v1::ApplyRequest>* reader,
                           v1::ApplyResponse* resp) override {
    return Observed("ApplyStream", [&] { return DoApplyStream(ctx, reader, resp); });
  }
  grpc::Status Schedule(grpc::ServerContext* ctx, const v1::ScheduleRequest* req, v1::ScheduleResponse* resp) override {
    return Observed("Schedule", [&] { return DoSchedule(ctx, req, resp); });
  }
  grpc::Status Evaluate(grpc::ServerContext* ctx, const v1::EvaluateRequest* req, v1::EvaluateResponse* resp) override {
    return Observed("Evaluate", [&] { return DoEvaluate(ctx, req, resp); });
  }
  grpc::Status Snapshot(grpc::ServerContext* ctx, const v1::SnapshotRequest* req, v1::SnapshotResponse* resp) override {
    return Observed("Snapshot", [&] { return DoSnapshot(ctx, req, resp); });
  }
  grpc::Status SnapshotStream(grpc::ServerContext* ctx, const v1::SnapshotRequest* req,
                              grpc::ServerWriter<v1::SnapshotChunk>* writer) override {
    return Observed("SnapshotStream", [&] { return DoSnapshotStream(ctx, req, writer); });
  }
  grpc::Status EvaluateStream(grpc::ServerContext* ctx, const v1::EvaluateRequest* req,
                              grpc::ServerWriter<v1::EvaluateChunk>* writer) override {
    return Observed("EvaluateStream", [&] { return DoEvaluateStream(ctx, req, writer); });
  }
  grpc::Status Drain(grpc::ServerContext* ctx, const v1::DrainRequest* req, v1::DrainResponse* resp) override {
    return Observed("Drain", [&] {
      return WhatIf(ctx, *req, resp,
                    [&](PlacementState& s, const Precondition& e) { return s.Drain({req->nodes().begin(), req->nodes().end()}, e); },
                    [&](const whatif::DrainResult& r) { FillDrain(r, resp->mutable_result()); });
    });
  }
  grpc::Status Consolidate(grpc::ServerContext* ctx, const v1::ConsolidateRequest* req,
                           v1::ConsolidateResponse* resp) override {
    // The candidates are independent what-ifs on one state: shared among the free replicas.
    return Observed("Consolidate", [&] {
      if (grpc::Status a = Authorize(ctx); !a.ok()) return a;
      const std::vector<std::string> candidates(req->candidates().begin(), req->candidates().end());
      std::vector<std::vector<whatif::DrainResult>> shares(std::max<size_t>(1, pool_.replicas()));
      std::atomic<uint64_t> revision{0};
      const absl::Status s = pool_.ReadShared(
          req->fork(), Expected(*req), shares.size(),
          [&](PlacementState& state, const Precondition& e, size_t part, size_t parts) {
            KPLACE_ASSIGN_OR_RETURN(shares[part], state.Consolidate(candidates, e, part, parts));
            revision = state.revision();
            return absl::OkStatus();
          });
      if (!s.ok()) return ToGrpc(s);
      resp->set_revision(revision);
      resp->set_instance(pool_.instance());
      for (const auto& share : shares) {
        for (const whatif::DrainResult& r : share) FillDrain(r, resp->add_candidates());
      }
      return grpc::Status::OK;
    });
  }
  grpc::Status Replicas(grpc::ServerContext* ctx, const v1::ReplicasRequest* req, v1::ReplicasResponse* resp) override {
    return Observed("Replicas", [&] {
      return WhatIf(ctx, *req, resp, [&](PlacementState& s, const Precondition& e) { return s.Replicas(req->pod(), req->max(), e); },
                    [&](const whatif::ReplicasResult& r) {
        resp->set_replicas(r.replicas);
        for (const auto& [node, n] : r.per_node) (*resp->mutable_per_node())[node] = n;
        if (r.stopped_by) FillPlacement(*r.stopped_by, resp->mutable_stopped_by());
      });
    });
  }
  grpc::Status Fits(grpc::ServerContext* ctx, const v1::FitsRequest* req, v1::FitsResponse* resp) override {
    return Observed("Fits", [&] {
      const std::vector<std::string> nodes(req->nodes().begin(), req->nodes().end());
      auto fill = [&](const std::vector<cycle::NodeFit>& fits) {
        for (const cycle::NodeFit& f : fits) {
          if (f.status.IsSuccess()) {
            resp->add_fits(f.node);
            continue;
          }
          v1::NodeVerdict* v = resp->add_rejected();
          v->set_node(f.node);
          v->set_plugin(f.plugin);
          v->set_code(CodeName(f.status.code));
          v->set_reason(f.status.Message());
        }
      };
      if (!req->reserve()) {
        return WhatIf(ctx, *req, resp,
                      [&](PlacementState& s, const Precondition& e) { return s.Fits(req->pod(), nodes, req->first_fit(), e); },
                      fill);
      }
      if (grpc::Status a = Authorize(ctx); !a.ok()) return a;
      uint64_t revision = 0;
      auto r = pool_.Reserve(req->fork(), req->pod(), nodes, Expected(*req), &revision);
      if (!r.ok()) return ToGrpc(r.status());
      resp->set_revision(revision);
      resp->set_instance(pool_.instance());
      fill(*r);
      return grpc::Status::OK;
    });
  }
  grpc::Status Fork(grpc::ServerContext* ctx, const v1::ForkRequest* req, v1::ForkResponse* resp) override {
    return Observed("Fork", [&] { return DoFork(ctx, req, resp); });
  }
  grpc::Status CommitFork(grpc::ServerContext* ctx, const v1::ForkHandle* req, v1::CommitForkResponse* resp) override {
    return Observed("CommitFork", [&] { return DoCommitFork(ctx, req, resp); });
  }
  grpc::Status DiscardFork(grpc::ServerContext* ctx, const v1::ForkHandle* req, v1::DiscardForkResponse* resp) override {
    return Observed("DiscardFork", [&] { return DoDiscardFork(ctx, req, resp); });
  }
  grpc::Status ScaleUp(grpc::ServerContext* ctx, const v1::ScaleUpRequest* req, v1::ScaleUpResponse* resp) override {
    return Observed("ScaleUp", [&] {
      whatif::ScaleUpOptions options;
      if (req->has_max_nodes()) options.max_nodes = req->max_nodes();
      return WhatIf(ctx, *req, resp,
                    [&](PlacementState& s, const Precondition& e) {
                      return s.ScaleUp(req->pods(), req->node_templates(), options, e);
                    },
                    [&](const whatif::ScaleUpResult& r) {
                      for (const auto& [t, n] : r.new_nodes) (*resp->mutable_new_nodes())[t] = n;
                      for (const cycle::Placement& p : r.pods) FillPlacement(p, resp->add_pending());
                    });
    });
  }

 private:
  // Every call is counted by its status code and timed, waits included.
  template <typename F>
  grpc::Status Observed(const char* call, F&& f) {
    const auto start = std::chrono::steady_clock::now();
    grpc::Status s = f();
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    metrics_->ObserveCall(call, GrpcCodeName(s.error_code()), took.count());
    return s;
  }

  grpc::Status DoReset(grpc::ServerContext* ctx, const v1::ResetRequest* req, v1::ResetResponse* resp) {
    if (grpc::Status a = Authorize(ctx); !a.ok()) return a;
    auto r = pool_.Reset(req->objects(), req->config());
    if (!r.ok()) return ToGrpc(r.status());
    resp->set_revision(r->revision);
    resp->set_instance(pool_.instance());
    resp->set_nodes(r->nodes);
    resp->set_bound_pods(r->bound_pods);
    resp->set_pending_pods(r->pending_pods);
    metrics_->SetRevision(r->revision);
    return grpc::Status::OK;
  }

  grpc::Status DoApply(grpc::ServerContext* ctx, const v1::ApplyRequest* req, v1::ApplyResponse* resp) {
    if (grpc::Status a = Authorize(ctx); !a.ok()) return a;
    return ApplyEvents(req->fork(), {req->events().begin(), req->events().end()},  // views of the request's strings
                       Expected(*req), resp);
  }

  grpc::Status DoApplyStream(grpc::ServerContext* ctx, grpc::ServerReader<v1::ApplyRequest>* reader,
                             v1::ApplyResponse* resp) {
    if (grpc::Status a = Authorize(ctx); !a.ok()) return a;
    // Gathered first: a client that goes away mid-stream leaves nothing applied.
    // The messages are kept and their events viewed, not copied.
    std::vector<std::unique_ptr<v1::ApplyRequest>> reqs;
    std::vector<std::string_view> events;
    Precondition expected;
    std::string fork;
    for (auto req = std::make_unique<v1::ApplyRequest>(); reader->Read(req.get()); req = std::make_unique<v1::ApplyRequest>()) {
      if (req->has_expected_revision()) expected.revision = req->expected_revision();
      if (!req->expected_instance().empty()) expected.instance = req->expected_instance();
      if (!req->fork().empty()) fork = req->fork();
      events.insert(events.end(), req->events().begin(), req->events().end());
      reqs.push_back(std::move(req));
    }
    if (ctx->IsCancelled()) return grpc::Status(grpc::StatusCode::CANCELLED, "the stream was cancelled: nothing applied");
    return ApplyEvents(fork, events, expected, resp);
  }

  grpc::Status DoSchedule(grpc::ServerContext* ctx, const v1::ScheduleRequest* req, v1::ScheduleResponse* resp) {
    if (grpc::Status a = Authorize(ctx); !a.ok()) return a;
    if (!v1::Mode_IsValid(req->mode())) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          StrCat("mode: unknown value ", req->mode(), " (COMMIT = 0 or DRY_RUN = 1)"));
    }
    std::vector<GangSpec> gangs;
    for (const v1::Gang& g : req->gangs()) gangs.push_back(GangSpec{g.name(), g.min_count(), {g.pods().begin(), g.pods().end()}});
    auto r = pool_.Schedule(req->fork(), req->pods(), req->mode() == v1::DRY_RUN, Expected(*req), gangs, req->explain(),
                            req->stop_on_failure());
    if (!r.ok()) return ToGrpc(r.status());
    resp->set_revision(r->revision);
    resp->set_instance(pool_.instance());
    resp->set_stopped(r->stopped);
    const int64_t placed = Placed(r->placements);
    metrics_->PodsDecided(req->mode() == v1::DRY_RUN ? "DRY_RUN" : "COMMIT", placed,
                          static_cast<int64_t>(r->placements.size()) - placed);
    if (req->mode() != v1::DRY_RUN && req->fork().empty()) metrics_->SetRevision(r->revision);
    for (size_t k = 0; k < r->placements.size(); ++k) Fill(*r, k, resp->add_placements());
    for (const GangResult& g : r->gangs) {
      v1::GangResult* out = resp->add_gangs();
      out->set_name(g.name);
      out->set_placed(g.placed);
      out->set_placed_count(g.placed_count);
      out->set_min_count(g.min_count);
      out->set_first_unplaced(g.first_unplaced);
      out->set_reason(g.reason);
    }
    return grpc::Status::OK;
  }

  grpc::Status DoEvaluate(grpc::ServerContext* ctx, const v1::EvaluateRequest* req, v1::EvaluateResponse* resp) {
    if (grpc::Status a = Authorize(ctx); !a.ok()) return a;
    std::optional<ScheduleResult> r;
    const absl::Status s = pool_.Read(req->fork(), Expected(*req), [&](PlacementState& state, const Precondition& e) {
      KPLACE_ASSIGN_OR_RETURN(r, state.Evaluate(req->pods(), e, req->explain()));
      return absl::OkStatus();
    });
    if (!s.ok()) return ToGrpc(s);
    const int64_t placed = Placed(r->placements);
    metrics_->PodsDecided("EVALUATE", placed, static_cast<int64_t>(r->placements.size()) - placed);
    resp->set_revision(r->revision);
    resp->set_instance(pool_.instance());
    for (size_t k = 0; k < r->placements.size(); ++k) Fill(*r, k, resp->add_results());
    return grpc::Status::OK;
  }

  // The JSON is written after the state is let go.
  grpc::Status DoSnapshot(grpc::ServerContext* ctx, const v1::SnapshotRequest* req, v1::SnapshotResponse* resp) {
    if (grpc::Status a = Authorize(ctx); !a.ok()) return a;
    nlohmann::json list;
    uint64_t revision = 0;
    if (absl::Status r = pool_.Snapshot(req->fork(), &list, &revision); !r.ok()) return ToGrpc(r);
    resp->set_revision(revision);
    resp->set_instance(pool_.instance());
    resp->set_objects(list.dump());
    return grpc::Status::OK;
  }

  // A stream's caller authorized and its max_chunk_bytes checked, into *max.
  grpc::Status StreamLimit(grpc::ServerContext* ctx, int32_t requested, size_t* max) {
    if (grpc::Status a = Authorize(ctx); !a.ok()) return a;
    const auto bytes = ChunkBytes("max_chunk_bytes", requested, max_message_bytes_);
    if (!bytes.ok()) return ToGrpc(bytes.status());
    *max = *bytes;
    return grpc::Status::OK;
  }

  // The streams read the state, then write after letting it go: a slow reader holds
  // up no other call.
  grpc::Status DoSnapshotStream(grpc::ServerContext* ctx, const v1::SnapshotRequest* req,
                                grpc::ServerWriter<v1::SnapshotChunk>* writer) {
    size_t max = 0;
    if (grpc::Status s = StreamLimit(ctx, req->max_chunk_bytes(), &max); !s.ok()) return s;
    nlohmann::json list;
    uint64_t revision = 0;
    if (absl::Status r = pool_.Snapshot(req->fork(), &list, &revision); !r.ok()) return ToGrpc(r);
    LastMarked<v1::SnapshotChunk> out([&](const v1::SnapshotChunk& c) { return writer->Write(c); });
    return StreamList(list, revision, pool_.instance(), max, out) ? grpc::Status::OK : ClientGone();
  }

  grpc::Status DoEvaluateStream(grpc::ServerContext* ctx, const v1::EvaluateRequest* req,
                                grpc::ServerWriter<v1::EvaluateChunk>* writer) {
    size_t max = 0;
    if (grpc::Status s = StreamLimit(ctx, req->max_chunk_bytes(), &max); !s.ok()) return s;
    v1::EvaluateResponse whole;
    if (grpc::Status s = DoEvaluate(ctx, req, &whole); !s.ok()) return s;
    std::vector<v1::PodPlacement> results(std::make_move_iterator(whole.mutable_results()->begin()),
                                          std::make_move_iterator(whole.mutable_results()->end()));
    LastMarked<v1::EvaluateChunk> out([&](const v1::EvaluateChunk& c) { return writer->Write(c); });
    return StreamResults(std::move(results), whole.revision(), whole.instance(), max, out) ? grpc::Status::OK
                                                                                            : ClientGone();
  }

  static grpc::Status ClientGone() {
    return grpc::Status(grpc::StatusCode::CANCELLED, "the client went away mid-stream");
  }

  // A wrong or missing token changes nothing: checked before any work.
  grpc::Status Authorize(const grpc::ServerContext* ctx) const {
    if (token_.empty()) return grpc::Status::OK;
    const auto& md = ctx->client_metadata();
    auto it = md.find("authorization");
    if (it == md.end() || !BearerTokenIs(std::string_view(it->second.data(), it->second.size()), token_)) {
      return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "a bearer token is required (authorization: Bearer <token>)");
    }
    return grpc::Status::OK;
  }

  // A what-if, authorized: `compute` the answer on a state at the newest revision (or the
  // request's fork), then `fill` the reply, with that state's revision.
  template <typename Request, typename Response, typename Compute, typename F>
  grpc::Status WhatIf(grpc::ServerContext* ctx, const Request& req, Response* resp, Compute&& compute, F&& fill) {
    if (grpc::Status a = Authorize(ctx); !a.ok()) return a;
    const absl::Status s = pool_.Read(req.fork(), Expected(req), [&](PlacementState& state, const Precondition& e) {
      auto r = compute(state, e);
      if (!r.ok()) return r.status();
      resp->set_revision(state.revision());
      fill(*r);
      return absl::OkStatus();
    });
    if (!s.ok()) return ToGrpc(s);
    resp->set_instance(pool_.instance());
    return grpc::Status::OK;
  }

  static void FillDrain(const whatif::DrainResult& r, v1::DrainResult* out) {
    for (const std::string& n : r.nodes) out->add_nodes(n);
    out->set_drainable(r.drainable);
    for (const cycle::Placement& p : r.pods) FillPlacement(p, out->add_pods());
    for (const whatif::PdbViolation& v : r.pdb_violations) {
      v1::PdbViolation* pv = out->add_pdb_violations();
      pv->set_pdb(v.pdb);
      pv->set_evicted(v.evicted);
      pv->set_disruptions_allowed(v.allowed);
    }
  }

  static void Fill(const ScheduleResult& r, size_t k, v1::PodPlacement* out) {
    if (k < r.explanations.size()) out->set_explanation(r.explanations[k]);
    FillPlacement(r.placements[k], out);
  }

  static void FillPlacement(const cycle::Placement& p, v1::PodPlacement* out) {
    out->set_pod(p.pod);
    out->set_node(p.node);
    out->set_code(CodeName(p.code));
    out->set_message(p.message);
    out->set_feasible(p.feasible);
    out->set_score(p.score);
    if (p.preemption) {
      out->set_nominated_node(p.preemption->nominated_node);
      for (const std::string& v : p.preemption->victims) out->add_victims(v);
    }
  }

  grpc::Status ApplyEvents(const std::string& fork, const std::vector<std::string_view>& events,
                           const Precondition& expected, v1::ApplyResponse* resp) {
    auto r = pool_.Apply(fork, events, expected);
    if (!r.ok()) return ToGrpc(r.status());
    resp->set_revision(*r);
    resp->set_instance(pool_.instance());
    resp->set_applied(static_cast<int64_t>(events.size()));
    if (fork.empty()) metrics_->SetRevision(*r);
    return grpc::Status::OK;
  }

  // A fork's owner, for the per-client limit: the peer's address without its port.
  static std::string Client(const grpc::ServerContext* ctx) {
    const std::string peer = ctx->peer();
    const size_t colon = peer.rfind(':');
    return colon == std::string::npos || colon < peer.find(':') + 1 ? peer : peer.substr(0, colon);
  }

  grpc::Status DoFork(grpc::ServerContext* ctx, const v1::ForkRequest* req, v1::ForkResponse* resp) {
    if (grpc::Status a = Authorize(ctx); !a.ok()) return a;
    auto r = pool_.Fork(Expected(*req), req->ttl_seconds(), Client(ctx));
    if (!r.ok()) return ToGrpc(r.status());
    resp->set_fork(r->id);
    resp->set_revision(r->revision);
    resp->set_instance(pool_.instance());
    resp->set_ttl_seconds(r->ttl_seconds);
    return grpc::Status::OK;
  }

  grpc::Status DoCommitFork(grpc::ServerContext* ctx, const v1::ForkHandle* req, v1::CommitForkResponse* resp) {
    if (grpc::Status a = Authorize(ctx); !a.ok()) return a;
    auto r = pool_.Commit(req->fork());
    if (!r.ok()) return ToGrpc(r.status());
    resp->set_revision(*r);
    resp->set_instance(pool_.instance());
    metrics_->SetRevision(*r);
    return grpc::Status::OK;
  }

  grpc::Status DoDiscardFork(grpc::ServerContext* ctx, const v1::ForkHandle* req, v1::DiscardForkResponse* resp) {
    if (grpc::Status a = Authorize(ctx); !a.ok()) return a;
    if (absl::Status s = pool_.Discard(req->fork()); !s.ok()) return ToGrpc(s);
    resp->set_revision(pool_.revision());
    resp->set_instance(pool_.instance());
    return grpc::Status::OK;
  }

  StatePool pool_;
  const std::string token_;
  const int32_t max_message_bytes_;
  Metrics* metrics_;
};

std::shared_ptr<grpc::ServerCredentials> Credentials(const ServerOptions& o) {
  if (o.tls_cert.empty()) return grpc::InsecureServerCredentials();
  grpc::SslServerCredentialsOptions ssl(o.client_ca.empty() ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
                                                            : GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  ssl.pem_key_cert_pairs.push_back({o.tls_key, o.tls_cert});
  ssl.pem_root_certs = o.client_ca;
  return grpc::SslServerCredentials(ssl);
}

}  // namespace

bool BearerTokenIs(std::string_view header, std::string_view token) {
  // RFC 7235: the scheme is case-insensitive; one or more spaces before the credentials.
  constexpr std::string_view kScheme = "bearer";
  if (header.size() <= kScheme.size() || header[kScheme.size()] != ' ') return false;
  for (size_t i = 0; i < kScheme.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(header[i])) != kScheme[i]) return false;
  }
  std::string_view given = header.substr(kScheme.size());
  given.remove_prefix(std::min(given.size(), given.find_first_not_of(' ')));
  if (given.size() != token.size()) return false;
  unsigned char diff = 0;  // every byte compared: no early exit to time
  for (size_t i = 0; i < token.size(); ++i) diff |= static_cast<unsigned char>(given[i] ^ token[i]);
  return diff == 0;
}

absl::Status CheckAddress(std::string_view flag, const std::string& address) {
  const size_t colon = address.rfind(':');
  const std::string_view port = colon == std::string::npos ? std::string_view() : std::string_view(address).substr(colon + 1);
  bool digits = !port.empty() && port.size() <= 5;
  for (char c : port) digits = digits && c >= '0' && c <= '9';
  if (!digits || std::stoi(std::string(port)) > 65535 || colon == 0) {
    return absl::InvalidArgumentError(StrCat(flag, " ", address, ": expected HOST:PORT with a port from 0 to 65535"));
  }
  return absl::OkStatus();
}

bool IsLoopback(const std::string& address) {
  const size_t colon = address.rfind(':');
  const std::string host = colon == std::string::npos ? address : address.substr(0, colon);
  return host == "localhost" || host == "[::1]" || host.rfind("127.", 0) == 0;
}

absl::Status CheckServerOptions(const ServerOptions& o) {
  if (o.tls_cert.empty() != o.tls_key.empty()) return absl::InvalidArgumentError("TLS needs both a certificate and its key");
  if (!o.client_ca.empty() && o.tls_cert.empty()) return absl::InvalidArgumentError("a client CA needs TLS (a certificate and key)");
  KPLACE_RETURN_IF_ERROR(CheckAddress("--listen", o.listen));
  if (!o.metrics_listen.empty()) KPLACE_RETURN_IF_ERROR(CheckAddress("--metrics-listen", o.metrics_listen));
  for (const std::string& address : {o.listen, o.metrics_listen}) {
    if (!address.empty() && !IsLoopback(address) && (o.tls_cert.empty() || o.token.empty())) {
      return absl::InvalidArgumentError(StrCat(address, ": an address beyond loopback needs TLS (certificate and key) and a token"));
    }
  }
  return absl::OkStatus();
}

struct LocalServer::Impl {
  explicit Impl(const ServerOptions& o) : service(o, &metrics) {}
  Metrics metrics;
  std::unique_ptr<prometheus::Exposer> exposer;
  PlacementService service;
  std::unique_ptr<grpc::Server> server;
  int port = 0;
};

absl::StatusOr<std::unique_ptr<LocalServer>> LocalServer::Start(const ServerOptions& options) {
  KPLACE_RETURN_IF_ERROR(CheckServerOptions(options));
  std::unique_ptr<LocalServer> out(new LocalServer);
  out->impl_ = std::make_unique<Impl>(options);
  Impl& i = *out->impl_;
  if (!options.metrics_listen.empty()) {
    try {
      i.exposer = std::make_unique<prometheus::Exposer>(options.metrics_listen);
    } catch (const std::exception& e) {
      return absl::UnavailableError(StrCat("--metrics-listen ", options.metrics_listen, ": cannot listen: ", e.what()));
    }
    i.exposer->RegisterCollectable(i.metrics.registry());
    const std::vector<int> ports = i.exposer->GetListeningPorts();
    out->metrics_port_ = ports.empty() ? 0 : ports[0];
  }
  grpc::EnableDefaultHealthCheckService(true);
  // grpcurl and other generic clients list and describe the service without the .proto.
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  builder.AddListeningPort(options.listen, Credentials(options), &i.port);
  builder.SetMaxReceiveMessageSize(options.max_message_bytes);
  builder.SetMaxSendMessageSize(options.max_message_bytes);
  builder.RegisterService(&i.service);
  i.server = builder.BuildAndStart();
  if (!i.server || i.port == 0) return absl::UnavailableError(StrCat("cannot listen on ", options.listen));
  return out;
}

LocalServer::~LocalServer() { Stop(); }

int LocalServer::port() const { return impl_->port; }

void LocalServer::Stop() {
  if (!impl_ || !impl_->server) return;
  impl_->server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(10));
  impl_->server->Wait();
  impl_->server.reset();
}

int RunServer(const ServerOptions& options, const std::function<void(int port)>& ready) {
  if (absl::Status s = CheckServerOptions(options); !s.ok()) {
    std::fprintf(stderr, "kplace serve: %s\n", std::string(s.message()).c_str());
    return 2;
  }
  // SIGTERM and SIGINT reach a waiting thread only (gRPC's threads inherit the mask).
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  auto server = LocalServer::Start(options);
  if (!server.ok()) {
    std::fprintf(stderr, "kplace serve: %s\n", std::string(server.status().message()).c_str());
    return 1;
  }
  const int port = (*server)->port();
  const std::string metrics_line =
      options.metrics_listen.empty() ? "" : StrCat(", metrics on ", options.metrics_listen, " (port ", (*server)->metrics_port(), ")");
  std::fprintf(stderr, "kplace serve: listening on %s (port %d)%s%s%s\n", options.listen.c_str(), port,
               options.tls_cert.empty() ? "" : options.client_ca.empty() ? ", TLS" : ", mutual TLS",
               options.token.empty() ? "" : ", bearer token", metrics_line.c_str());
  if (ready) ready(port);
  int sig = 0;
  sigwait(&stop, &sig);
  std::fprintf(stderr, "kplace serve: %s: draining in-flight calls\n", sig == SIGTERM ? "SIGTERM" : "SIGINT");
  (*server)->Stop();
  std::fprintf(stderr, "kplace serve: stopped\n");
  return 0;
}

}  // namespace kplace::serve
