#pragma once
// What every what-if runs in: a transaction on the scheduler's state that is reverted.
#include "absl/status/status.h"
#include "kplace/common/status.h"
#include "kplace/state/cluster_state.h"

namespace kplace::whatif {

// Reverts the transaction it opened however the what-if ends: the state is left as found.
class Fork {
 public:
  explicit Fork(state::ClusterState* state) : state_(state) {}
  absl::Status Begin() {
    KPLACE_RETURN_IF_ERROR(state_->Begin());
    open_ = true;
    return absl::OkStatus();
  }
  absl::Status Revert() {
    open_ = false;
    return state_->Revert();
  }
  ~Fork() {
    if (open_) (void)state_->Revert();
  }
  Fork(const Fork&) = delete;
  Fork& operator=(const Fork&) = delete;

 private:
  state::ClusterState* state_;
  bool open_ = false;
};

}  // namespace kplace::whatif
