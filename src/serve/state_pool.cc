#include "kplace/serve/state_pool.h"

#include <algorithm>
#include <cstdio>
#include <random>
#include <utility>

#include "absl/strings/cord.h"
#include "kplace/common/status.h"
#include "kplace/common/strings.h"

namespace kplace::serve {
namespace {

// Replicas and forks check a call's revision themselves; the instance is the primary's.
Precondition RevisionOnly(const Precondition& expected) { return Precondition(expected.revision); }

constexpr char kUnknownFork[] = "kplace.dev/unknown-fork";

absl::Status UnknownFork(std::string message) {
  absl::Status s = absl::NotFoundError(std::move(message));
  s.SetPayload(kUnknownFork, absl::Cord("1"));
  return s;
}

std::string NewForkId() {
  static std::mutex mu;
  static std::mt19937_64 rng(std::random_device{}());
  std::lock_guard<std::mutex> lock(mu);
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(rng()));
  return StrCat("fork-", hex);
}

}  // namespace

bool IsUnknownFork(const absl::Status& s) { return s.GetPayload(kUnknownFork).has_value(); }

// A replica held by a call, given back however the call ends.
class StatePool::Lease {
 public:
  Lease(StatePool* pool, Replica* r) : pool_(pool), r_(r) {}
  ~Lease() {
    if (r_) pool_->Release(r_);
  }
  Lease(const Lease&) = delete;
  Lease& operator=(const Lease&) = delete;

 private:
  StatePool* pool_;
  Replica* r_;
};

// A call on an open fork: found (expired forks ended first), kept from expiring while the
// call runs, one call at a time; its idle time starts again when the call ends.
class StatePool::ForkCall {
 public:
  ForkCall(StatePool* pool, const std::string& id) : pool_(pool) {
    std::vector<std::shared_ptr<OpenFork>> ended;
    {
      std::unique_lock<std::mutex> lock(pool->mu_);
      ended = pool->ExpireLocked();
      auto found = pool->FindLocked(id);
      if (found.ok()) {
        fork_ = *found;
        ++fork_->calls;
      } else {
        status_ = found.status();
      }
    }
    pool->EndForks(std::move(ended));
    if (!fork_) return;
    lock_ = std::unique_lock<std::mutex>(fork_->mu);
    if (fork_->ended) status_ = UnknownFork(StrCat("fork: ", id, " ended while this call waited for it"));
  }
  ~ForkCall() {
    if (!fork_) return;
    if (lock_.owns_lock()) lock_.unlock();
    std::lock_guard<std::mutex> lock(pool_->mu_);
    fork_->deadline = std::chrono::steady_clock::now() + fork_->ttl;
    --fork_->calls;
  }
  const absl::Status& status() const { return status_; }
  OpenFork* operator->() const { return fork_.get(); }
  PlacementState& state() const { return *fork_->replica->state; }

 private:
  StatePool* pool_;
  std::shared_ptr<OpenFork> fork_;
  std::unique_lock<std::mutex> lock_;
  absl::Status status_;
};

StatePool::StatePool(cycle::Options options, int32_t replicas, ForkLimits limits)
    : primary_(options), limits_(limits) {
  for (int32_t k = 0; k < replicas; ++k) {
    auto r = std::make_unique<Replica>();
    r->state = std::make_unique<PlacementState>(options);
    replicas_.push_back(std::move(r));
  }
  if (!replicas_.empty()) warmer_ = std::thread([this] { Warm(); });
}

StatePool::~StatePool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  changed_.notify_all();
  if (warmer_.joinable()) warmer_.join();
}

std::vector<std::string> StatePool::Placed(const std::vector<cycle::Placement>& placements) {
  std::vector<std::string> nodes;
  nodes.reserve(placements.size());
  for (const cycle::Placement& p : placements) nodes.push_back(p.node);
  return nodes;
}

absl::Status StatePool::Replay(PlacementState* state, const Write& w) {
  std::vector<std::string> placed;
  switch (w.kind) {
    case Write::kReset: {
      KPLACE_RETURN_IF_ERROR(state->Reset(w.text, w.config).status());
      state->Renumber(w.revision);
      break;
    }
    case Write::kApply: {
      const std::vector<std::string_view> events(w.events.begin(), w.events.end());
      KPLACE_RETURN_IF_ERROR(state->Apply(events, {}).status());
      break;
    }
    case Write::kSchedule: {
      KPLACE_ASSIGN_OR_RETURN(ScheduleResult r, state->Schedule(w.text, /*dry_run=*/false, {}, {}, false, w.stop_on_failure));
      placed = Placed(r.placements);
      break;
    }
    case Write::kReserve: {
      KPLACE_ASSIGN_OR_RETURN(std::vector<cycle::NodeFit> fits, state->Fits(w.text, w.nodes, true, {}, /*reserve=*/true));
      placed.push_back(!fits.empty() && fits.back().status.IsSuccess() ? fits.back().node : "");
      break;
    }
  }
  if (placed != w.placed || state->revision() != w.revision) {
    return absl::InternalError(StrCat("a replayed write (", static_cast<int>(w.kind), ") decided otherwise: revision ",
                                      state->revision(), " for ", w.revision));
  }
  return absl::OkStatus();
}

absl::Status StatePool::CheckInstance(const Precondition& expected) const {
  if (!expected.instance.empty() && expected.instance != instance()) return primary_.Check(Precondition(std::nullopt, expected.instance));
  return absl::OkStatus();
}

void StatePool::LogLocked(Write w) {
  if (replicas_.empty()) return;
  w.seq = ++seq_;
  log_.push_back(std::make_shared<const Write>(std::move(w)));
  TrimLocked();
  changed_.notify_all();
}

void StatePool::TrimLocked() {
  uint64_t need = seq_;
  for (const auto& r : replicas_) {
    if (r->state) need = std::min(need, r->seq);
  }
  size_t latest_reset = 0;
  for (size_t k = log_.size(); k-- > 0;) {
    if (log_[k]->kind == Write::kReset) {
      latest_reset = k;
      break;
    }
  }
  // Nobody needs what it has, nor what the latest Reset replaces.
  size_t drop = 0;
  while (drop < log_.size() && (log_[drop]->seq <= need || drop < latest_reset)) ++drop;
  log_.erase(log_.begin(), log_.begin() + static_cast<std::ptrdiff_t>(drop));
}

StatePool::Replica* StatePool::AcquireLocked(std::unique_lock<std::mutex>* lock) {
  for (;;) {
    Replica* best = nullptr;
    bool reads_hold = false;
    for (const auto& r : replicas_) {
      if (!r->state) continue;  // dropped
      if (!r->busy) {
        if (!best || r->seq > best->seq) best = r.get();
      } else if (!r->forked) {
        reads_hold = true;
      }
    }
    if (best) {
      best->busy = true;
      return best;
    }
    if (!reads_hold) return nullptr;
    changed_.wait(*lock);
  }
}

void StatePool::Release(Replica* r) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    r->busy = false;
    r->forked = false;
    TrimLocked();
  }
  changed_.notify_all();
}

absl::Status StatePool::CatchUp(Replica* r, uint64_t upto) {
  std::vector<std::shared_ptr<const Write>> todo;
  {
    std::lock_guard<std::mutex> lock(mu_);
    size_t start = log_.size(), end = log_.size();
    for (size_t k = log_.size(); k-- > 0 && log_[k]->seq > r->seq;) {
      if (log_[k]->seq > upto) {
        end = k;
        start = k;
        continue;
      }
      start = k;
      if (log_[k]->kind == Write::kReset) break;  // what came before it does not matter
    }
    todo.assign(log_.begin() + static_cast<std::ptrdiff_t>(start), log_.begin() + static_cast<std::ptrdiff_t>(end));
  }
  for (const auto& w : todo) {
    absl::Status s = Replay(r->state.get(), *w);
    if (!s.ok()) {
      std::fprintf(stderr, "kplace serve: a replica left the pool: %s\n", std::string(s.message()).c_str());
      std::lock_guard<std::mutex> lock(mu_);
      r->state.reset();
      return absl::InternalError(StrCat("a replica disagreed with the state it copies (it is dropped; retry): ", s.message()));
    }
    std::lock_guard<std::mutex> lock(mu_);  // TrimLocked reads every replica's place
    r->seq = w->seq;
  }
  return absl::OkStatus();
}

std::vector<std::shared_ptr<StatePool::OpenFork>> StatePool::ExpireLocked() {
  std::vector<std::shared_ptr<OpenFork>> ended;
  const auto now = std::chrono::steady_clock::now();
  for (auto it = forks_.begin(); it != forks_.end();) {
    if (it->second->calls == 0 && it->second->deadline < now) {
      expired_.push_back(it->first);
      if (expired_.size() > 1024) expired_.pop_front();
      ended.push_back(std::move(it->second));
      it = forks_.erase(it);
    } else {
      ++it;
    }
  }
  return ended;
}

void StatePool::EndForks(std::vector<std::shared_ptr<OpenFork>> ended) {
  for (const auto& f : ended) {
    std::lock_guard<std::mutex> lock(f->mu);
    f->ended = true;
    if (f->replica->state) (void)f->replica->state->RevertFork();
    Release(f->replica);
  }
}

absl::StatusOr<std::shared_ptr<StatePool::OpenFork>> StatePool::FindLocked(const std::string& id) {
  auto it = forks_.find(id);
  if (it != forks_.end()) return it->second;
  if (std::find(expired_.begin(), expired_.end(), id) != expired_.end()) {
    return UnknownFork(StrCat("fork: ", id, " expired (no call within its ttl_seconds): its changes are gone"));
  }
  return UnknownFork(StrCat("fork: no open fork ", id, " (committed, discarded, or never made here)"));
}

void StatePool::Warm() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    changed_.wait_for(lock, std::chrono::seconds(1));
    if (stop_) break;
    std::vector<std::shared_ptr<OpenFork>> ended = ExpireLocked();
    if (!ended.empty()) {
      lock.unlock();
      EndForks(std::move(ended));
      lock.lock();
    }
    // Idle replicas behind the log catch up now, not in the next read's time.
    for (;;) {
      Replica* lag = nullptr;
      for (const auto& r : replicas_) {
        if (r->state && !r->busy && r->seq < seq_) lag = r.get();
      }
      if (!lag || stop_) break;
      lag->busy = true;
      lock.unlock();
      (void)CatchUp(lag);
      Release(lag);
      lock.lock();
    }
  }
}

absl::StatusOr<ResetResult> StatePool::Reset(std::string_view objects, std::string_view config) {
  std::unique_lock<std::shared_mutex> write(write_mu_);
  KPLACE_ASSIGN_OR_RETURN(ResetResult r, primary_.Reset(objects, config));
  Write w;
  w.kind = Write::kReset;
  if (!replicas_.empty()) {
    w.text = std::string(objects);
    w.config = std::string(config);
  }
  w.revision = r.revision;
  std::lock_guard<std::mutex> lock(mu_);
  LogLocked(std::move(w));
  return r;
}

absl::StatusOr<uint64_t> StatePool::Apply(const std::string& fork, const std::vector<std::string_view>& events,
                                          const Precondition& expected) {
  Write w;
  w.kind = Write::kApply;
  if (!fork.empty()) {
    ForkCall call(this, fork);
    KPLACE_RETURN_IF_ERROR(call.status());
    KPLACE_RETURN_IF_ERROR(CheckInstance(expected));
    const uint64_t before = call.state().revision();
    KPLACE_ASSIGN_OR_RETURN(uint64_t revision, call.state().Apply(events, RevisionOnly(expected)));
    if (revision != before) {
      w.events.assign(events.begin(), events.end());
      w.revision = revision;
      call->writes.push_back(std::move(w));
    }
    return revision;
  }
  std::unique_lock<std::shared_mutex> write(write_mu_);
  const uint64_t before = primary_.revision();
  KPLACE_ASSIGN_OR_RETURN(uint64_t revision, primary_.Apply(events, expected));
  if (revision == before) return revision;  // nothing changed: nothing to replay
  if (!replicas_.empty()) w.events.assign(events.begin(), events.end());
  w.revision = revision;
  std::lock_guard<std::mutex> lock(mu_);
  LogLocked(std::move(w));
  return revision;
}

absl::StatusOr<ScheduleResult> StatePool::Schedule(const std::string& fork, std::string_view pods, bool dry_run,
                                                   const Precondition& expected, const std::vector<GangSpec>& gangs,
                                                   bool explain, bool stop_on_failure) {
  if (dry_run) {
    std::optional<ScheduleResult> out;
    KPLACE_RETURN_IF_ERROR(Read(fork, expected, [&](PlacementState& s, const Precondition& e) {
      KPLACE_ASSIGN_OR_RETURN(out, s.Schedule(pods, true, e, gangs, explain, stop_on_failure));
      return absl::OkStatus();
    }));
    return std::move(*out);
  }
  // A commit: even one that binds nothing may move the start index, so it is replayed.
  Write w;
  w.kind = Write::kSchedule;
  w.stop_on_failure = stop_on_failure;
  if (!fork.empty()) {
    ForkCall call(this, fork);
    KPLACE_RETURN_IF_ERROR(call.status());
    KPLACE_RETURN_IF_ERROR(CheckInstance(expected));
    KPLACE_ASSIGN_OR_RETURN(ScheduleResult r,
                            call.state().Schedule(pods, false, RevisionOnly(expected), gangs, explain, stop_on_failure));
    w.text = std::string(pods);
    w.placed = Placed(r.placements);
    w.revision = r.revision;
    call->writes.push_back(std::move(w));
    return r;
  }
  std::unique_lock<std::shared_mutex> write(write_mu_);
  KPLACE_ASSIGN_OR_RETURN(ScheduleResult r, primary_.Schedule(pods, false, expected, gangs, explain, stop_on_failure));
  if (!replicas_.empty()) {
    w.text = std::string(pods);
    w.placed = Placed(r.placements);
  }
  w.revision = r.revision;
  std::lock_guard<std::mutex> lock(mu_);
  LogLocked(std::move(w));
  return r;
}

absl::StatusOr<std::vector<cycle::NodeFit>> StatePool::Reserve(const std::string& fork, std::string_view pod,
                                                               const std::vector<std::string>& nodes,
                                                               const Precondition& expected, uint64_t* revision) {
  if (fork.empty()) {
    return absl::InvalidArgumentError(
        "reserve: a reservation binds the pod, so it needs a fork (Fork, then name it in `fork`; commit to keep it)");
  }
  ForkCall call(this, fork);
  KPLACE_RETURN_IF_ERROR(call.status());
  KPLACE_RETURN_IF_ERROR(CheckInstance(expected));
  KPLACE_ASSIGN_OR_RETURN(std::vector<cycle::NodeFit> fits,
                          call.state().Fits(pod, nodes, true, RevisionOnly(expected), /*reserve=*/true));
  if (!fits.empty() && fits.back().status.IsSuccess()) {
    Write w;
    w.kind = Write::kReserve;
    w.text = std::string(pod);
    w.nodes = nodes;
    w.placed = {fits.back().node};
    w.revision = call.state().revision();
    call->writes.push_back(std::move(w));
  }
  *revision = call.state().revision();
  return fits;
}

uint64_t StatePool::revision() {
  std::shared_lock<std::shared_mutex> read(write_mu_);
  return primary_.revision();
}

absl::Status StatePool::Read(const std::string& fork, const Precondition& expected,
                             const std::function<absl::Status(PlacementState&, const Precondition&)>& read) {
  KPLACE_RETURN_IF_ERROR(CheckInstance(expected));
  if (!fork.empty()) {
    ForkCall call(this, fork);
    KPLACE_RETURN_IF_ERROR(call.status());
    return read(call.state(), RevisionOnly(expected));
  }
  Replica* r = nullptr;
  std::vector<std::shared_ptr<OpenFork>> ended;
  {
    std::unique_lock<std::mutex> lock(mu_);
    ended = ExpireLocked();
    r = AcquireLocked(&lock);
  }
  EndForks(std::move(ended));
  if (!r) {  // no replica, or every one held by a fork: the primary, alone
    std::unique_lock<std::shared_mutex> write(write_mu_);
    return read(primary_, expected);
  }
  Lease lease(this, r);
  KPLACE_RETURN_IF_ERROR(CatchUp(r));
  return read(*r->state, RevisionOnly(expected));
}

absl::Status StatePool::ReadShared(
    const std::string& fork, const Precondition& expected, size_t parts,
    const std::function<absl::Status(PlacementState&, const Precondition&, size_t, size_t)>& read) {
  if (parts <= 1 || !fork.empty()) {
    return Read(fork, expected, [&](PlacementState& s, const Precondition& e) { return read(s, e, 0, 1); });
  }
  KPLACE_RETURN_IF_ERROR(CheckInstance(expected));
  std::vector<Replica*> held;
  std::vector<std::shared_ptr<OpenFork>> ended;
  uint64_t upto = 0;
  {
    std::unique_lock<std::mutex> lock(mu_);
    ended = ExpireLocked();
    if (Replica* first = AcquireLocked(&lock)) {
      held.push_back(first);
      for (const auto& r : replicas_) {  // the others that are free now: no waiting for more
        if (held.size() == parts) break;
        if (r->state && !r->busy) {
          r->busy = true;
          held.push_back(r.get());
        }
      }
    }
    upto = seq_;
  }
  EndForks(std::move(ended));
  if (held.empty()) {
    std::unique_lock<std::shared_mutex> write(write_mu_);
    return read(primary_, expected, 0, 1);
  }
  std::vector<std::unique_ptr<Lease>> leases;
  for (Replica* r : held) leases.push_back(std::make_unique<Lease>(this, r));
  for (Replica* r : held) KPLACE_RETURN_IF_ERROR(CatchUp(r, upto));
  std::vector<absl::Status> status(held.size());
  std::vector<std::thread> threads;
  for (size_t k = 1; k < held.size(); ++k) {
    threads.emplace_back([&, k] { status[k] = read(*held[k]->state, RevisionOnly(expected), k, held.size()); });
  }
  status[0] = read(*held[0]->state, RevisionOnly(expected), 0, held.size());
  for (std::thread& t : threads) t.join();
  for (const absl::Status& s : status) KPLACE_RETURN_IF_ERROR(s);
  return absl::OkStatus();
}

absl::Status StatePool::Snapshot(const std::string& fork, nlohmann::json* list, uint64_t* revision) {
  if (!fork.empty()) {
    ForkCall call(this, fork);
    KPLACE_RETURN_IF_ERROR(call.status());
    *revision = call.state().revision();
    *list = call.state().Snapshot();
    return absl::OkStatus();
  }
  std::shared_lock<std::shared_mutex> read(write_mu_);  // snapshots only read: beside each other
  KPLACE_RETURN_IF_ERROR(primary_.Check({}));
  *revision = primary_.revision();
  *list = primary_.Snapshot();
  return absl::OkStatus();
}

absl::StatusOr<ForkInfo> StatePool::Fork(const Precondition& expected, int64_t ttl_seconds, const std::string& client) {
  KPLACE_RETURN_IF_ERROR(CheckInstance(expected));
  if (ttl_seconds < 0 || ttl_seconds > limits_.max_ttl.count()) {
    return absl::InvalidArgumentError(
        StrCat("ttl_seconds: ", ttl_seconds, " is out of range (0 for the default ", limits_.default_ttl.count(),
               ", at most ", limits_.max_ttl.count(), ")"));
  }
  if (replicas_.empty()) {
    return absl::FailedPreconditionError("forks need replicas: this server runs with --replicas 0");
  }
  auto fork = std::make_shared<OpenFork>();
  fork->client = client;
  fork->ttl = ttl_seconds == 0 ? limits_.default_ttl : std::chrono::seconds(ttl_seconds);
  fork->calls = 1;  // not expired while it is being made
  std::vector<std::shared_ptr<OpenFork>> ended;
  {
    std::unique_lock<std::mutex> lock(mu_);
    ended = ExpireLocked();
    int32_t held = 0;
    for (const auto& [id, f] : forks_) held += f->client == client;
    if (held >= limits_.per_client) {
      lock.unlock();
      EndForks(std::move(ended));
      return absl::ResourceExhaustedError(StrCat("fork: this client holds ", held, " open forks, the limit (",
                                                 "commit or discard one first)"));
    }
    fork->replica = AcquireLocked(&lock);
    if (fork->replica) {
      fork->replica->forked = true;
      do fork->id = NewForkId();
      while (forks_.count(fork->id) > 0);
      forks_.emplace(fork->id, fork);
    }
  }
  EndForks(std::move(ended));
  if (!fork->replica) {
    return absl::ResourceExhaustedError(StrCat("fork: every replica (", replicas_.size(),
                                               ") is held by a fork: commit or discard one, or start kplace serve "
                                               "with more --replicas"));
  }
  auto fail = [&](absl::Status s) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      forks_.erase(fork->id);
    }
    Release(fork->replica);
    return s;
  };
  std::unique_lock<std::mutex> own(fork->mu);
  if (absl::Status s = CatchUp(fork->replica); !s.ok()) return fail(s);
  PlacementState& state = *fork->replica->state;
  if (absl::Status s = state.Check(RevisionOnly(expected)); !s.ok()) return fail(s);
  if (absl::Status s = state.BeginFork(); !s.ok()) return fail(s);
  fork->base_seq = fork->replica->seq;
  fork->base_revision = state.revision();
  ForkInfo info{fork->id, state.revision(), static_cast<int64_t>(fork->ttl.count())};
  own.unlock();
  std::lock_guard<std::mutex> lock(mu_);
  fork->deadline = std::chrono::steady_clock::now() + fork->ttl;
  fork->calls = 0;
  return info;
}

absl::StatusOr<uint64_t> StatePool::Commit(const std::string& id) {
  ForkCall call(this, id);
  KPLACE_RETURN_IF_ERROR(call.status());
  std::unique_lock<std::shared_mutex> write(write_mu_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (seq_ != call->base_seq) {
      return absl::FailedPreconditionError(StrCat("fork ", id, " started at revision ", call->base_revision,
                                                  "; the state has been written since (it is at revision ",
                                                  primary_.revision(), "): nothing was applied; discard the fork and "
                                                  "fork again"));
    }
  }
  // The primary takes the fork's writes as one: all of them or, should one decide
  // otherwise than it did in the fork, none.
  KPLACE_RETURN_IF_ERROR(primary_.BeginFork());
  for (const Write& w : call->writes) {
    if (absl::Status s = Replay(&primary_, w); !s.ok()) {
      (void)primary_.RevertFork();
      return absl::InternalError(StrCat("commit: the fork's writes decided otherwise on the state (nothing applied): ",
                                        s.message()));
    }
  }
  KPLACE_RETURN_IF_ERROR(primary_.CommitFork());
  KPLACE_RETURN_IF_ERROR(call.state().CommitFork());
  Replica* replica = call->replica;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (Write& w : call->writes) LogLocked(std::move(w));
    replica->seq = seq_;  // it made these writes itself
    call->ended = true;
    forks_.erase(id);
  }
  Release(replica);
  return primary_.revision();
}

absl::Status StatePool::Discard(const std::string& id) {
  ForkCall call(this, id);
  KPLACE_RETURN_IF_ERROR(call.status());
  absl::Status s = call.state().RevertFork();
  {
    std::lock_guard<std::mutex> lock(mu_);
    call->ended = true;
    forks_.erase(id);
  }
  Release(call->replica);
  return s;
}

int32_t StatePool::forks() {
  std::vector<std::shared_ptr<OpenFork>> ended;
  int32_t n = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ended = ExpireLocked();
    n = static_cast<int32_t>(forks_.size());
  }
  EndForks(std::move(ended));
  return n;
}

}  // namespace kplace::serve
