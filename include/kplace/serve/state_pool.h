#pragma once
// The service's state (docs/serve.md "Replicas and forks"): one primary PlacementState that
// every write goes to, and replicas kept in step by replaying the primary's writes in order,
// so that reads (dry runs, Evaluate, what-ifs) run beside each other and beside writes, and
// forks get a state of their own. Replaying is exact because the scheduler is deterministic:
// the same writes from the same state give the same state (the replay checks the revision
// and every placement, and a replica that disagrees is dropped).
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "kplace/serve/placement_state.h"

namespace kplace::serve {

struct ForkLimits {
  int32_t per_client = 4;  // open forks one client (peer address) may hold
  std::chrono::seconds default_ttl{60};
  std::chrono::seconds max_ttl{3600};
};

/** An open fork: its handle, the revision it starts from, and how long it lives idle. */
struct ForkInfo {
  std::string id;
  uint64_t revision = 0;
  int64_t ttl_seconds = 0;
};

/** Whether `s` says a call named a fork that is not open (NOT_FOUND on the service). */
bool IsUnknownFork(const absl::Status& s);

class StatePool {
 public:
  /** `replicas`: states kept beside the primary for reads and forks (0: every call on the
   *  primary, one at a time, and no forks). */
  StatePool(cycle::Options options, int32_t replicas, ForkLimits limits = {});
  ~StatePool();
  StatePool(const StatePool&) = delete;
  StatePool& operator=(const StatePool&) = delete;

  const std::string& instance() const { return primary_.instance(); }
  int32_t replicas() const { return static_cast<int32_t>(replicas_.size()); }

  // Writes. `fork` empty: the primary's, one at a time, each logged for the replicas;
  // otherwise the fork's (NotFound for an unknown or expired fork).
  absl::StatusOr<ResetResult> Reset(std::string_view objects, std::string_view config);
  absl::StatusOr<uint64_t> Apply(const std::string& fork, const std::vector<std::string_view>& events,
                                 const Precondition& expected);
  absl::StatusOr<ScheduleResult> Schedule(const std::string& fork, std::string_view pods, bool dry_run,
                                          const Precondition& expected, const std::vector<GangSpec>& gangs, bool explain,
                                          bool stop_on_failure = false);
  /** Fits with a reservation (PlacementState::Fits, `reserve`): a write, so a fork's only
   *  (InvalidArgument on the state). `revision`: the fork's afterwards. */
  absl::StatusOr<std::vector<cycle::NodeFit>> Reserve(const std::string& fork, std::string_view pod,
                                                      const std::vector<std::string>& nodes, const Precondition& expected,
                                                      uint64_t* revision);
  /** The state's revision now. */
  uint64_t revision();

  /** @brief A read: `read` runs on a state at the newest write (a free replica brought up
   *  to date; the primary, alone, when every replica is held by a fork), or on the fork's
   *  state, with `expected` to check there (its instance checked here already). It may
   *  change the state only inside a transaction it reverts. */
  absl::Status Read(const std::string& fork, const Precondition& expected,
                    const std::function<absl::Status(PlacementState&, const Precondition&)>& read);
  /** @brief Read in shares: `read` runs once per state on every free replica (at least one,
   *  at most `parts`), all brought to the same newest write, side by side on threads of
   *  their own, each told its share (part, of parts); on the fork or the primary alone (one
   *  share) as Read does. The first error is returned. */
  absl::Status ReadShared(const std::string& fork, const Precondition& expected, size_t parts,
                          const std::function<absl::Status(PlacementState&, const Precondition&, size_t part,
                                                           size_t parts)>& read);
  /** Snapshot of the primary (or the fork), with its revision. */
  absl::Status Snapshot(const std::string& fork, nlohmann::json* list, uint64_t* revision);

  /** @brief A fork of the newest state for `client`: FailedPrecondition when `expected` does
   *  not hold, ResourceExhausted when the client holds its limit or every replica is held
   *  by a fork, InvalidArgument for a ttl over the limit. `ttl_seconds` 0: the default; the
   *  fork ends (discarded) after that long without a call. */
  absl::StatusOr<ForkInfo> Fork(const Precondition& expected, int64_t ttl_seconds, const std::string& client);
  /** @brief The fork's writes applied to the primary, in order, when the primary is still
   *  where the fork started (otherwise FailedPrecondition, and the fork stays open); the fork
   *  ends. Returns the primary's new revision. */
  absl::StatusOr<uint64_t> Commit(const std::string& fork);
  absl::Status Discard(const std::string& fork);
  /** Open forks now (expired ones ended first). */
  int32_t forks();

 private:
  // One write of the primary or a fork, enough to replay it and to check the replay.
  struct Write {
    enum Kind { kReset, kApply, kSchedule, kReserve } kind = kApply;
    std::string text, config;                 // Reset: objects, config; Schedule, Reserve: the pods
    std::vector<std::string> events, nodes;   // Apply: events; Reserve: candidates
    std::vector<std::string> placed;          // Schedule, Reserve: each pod's node ("" none)
    bool stop_on_failure = false;             // Schedule's
    uint64_t revision = 0;                    // the state's after it
    uint64_t seq = 0;                         // its place in the primary's log
  };
  struct Replica {
    std::unique_ptr<PlacementState> state;
    uint64_t seq = 0;      // writes of the log it has
    bool busy = false;     // in a read, catching up, or held by a fork
    bool forked = false;   // held by a fork (reads do not wait for it)
  };
  struct OpenFork {
    std::string id, client;
    Replica* replica = nullptr;
    uint64_t base_seq = 0, base_revision = 0;
    std::vector<Write> writes;
    std::chrono::seconds ttl{0};
    std::chrono::steady_clock::time_point deadline;
    int32_t calls = 0;  // in flight: not expired under them
    bool ended = false;  // committed, discarded or expired while a call waited
    std::mutex mu;       // one call at a time
  };
  class Lease;
  class ForkCall;

  static absl::Status Replay(PlacementState* state, const Write& w);
  static std::vector<std::string> Placed(const std::vector<cycle::Placement>& placements);
  absl::Status CheckInstance(const Precondition& expected) const;
  // Appends `w` to the log (mu_ held by the caller): its seq, then trims.
  void LogLocked(Write w);
  void TrimLocked();
  // A free replica marked busy (mu_ held): waits while reads hold them all; null when none
  // is free or will be (all forks, or none at all).
  Replica* AcquireLocked(std::unique_lock<std::mutex>* lock);
  void Release(Replica* r);
  // Brings `r` (busy, held by the caller) to the newest write, or to write `upto`; drops it
  // (state null) on a disagreement.
  absl::Status CatchUp(Replica* r, uint64_t upto = UINT64_MAX);
  // Ends forks idle past their deadline (mu_ held); their replicas are reverted outside.
  std::vector<std::shared_ptr<OpenFork>> ExpireLocked();
  void EndForks(std::vector<std::shared_ptr<OpenFork>> ended);
  absl::StatusOr<std::shared_ptr<OpenFork>> FindLocked(const std::string& id);
  void Warm();

  PlacementState primary_;
  std::shared_mutex write_mu_;  // the primary: writes alone, Snapshot shared
  std::mutex mu_;               // everything below
  std::condition_variable changed_;
  std::vector<std::unique_ptr<Replica>> replicas_;
  std::deque<std::shared_ptr<const Write>> log_;  // from the latest Reset the replicas need on
  uint64_t seq_ = 0;                              // writes logged
  std::map<std::string, std::shared_ptr<OpenFork>> forks_;
  std::deque<std::string> expired_;  // recent expired forks, for a clear NotFound
  const ForkLimits limits_;
  bool stop_ = false;
  std::thread warmer_;
};

}  // namespace kplace::serve
