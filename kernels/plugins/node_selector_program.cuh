#pragma once
// Node selectors on the engine, shared by NodeAffinity and DynamicResources: label columns
// of the keys selectors refer to, and a selector compiled on the host into the flat
// requirement program (plugins::NaProgram) that kplace/plugins/node_affinity.h evaluates
// per node on either backend. Included by kernels/plugins/*.cu after kernels/backend.cuh.
#include <string>
#include <unordered_map>
#include <vector>

#include "kernels/backend.cuh"
#include "kplace/plugins/node_affinity.h"
#include "kplace/plugins/node_affinity_common.h"

namespace kplace::KPLACE_BACKEND_NS {

using plugins::NaNodeView;
using plugins::NaOp;
using plugins::NaProgram;
using plugins::NaRequirement;
using plugins::NaTerm;

/** Label columns of the keys pods have referenced so far, plus node names. Node labels
 *  never change while scheduling, so a key's column is built once. */
class LabelSlots {
 public:
  void Build(const engine::Snapshot& s) {
    n_ = s.num_nodes();
    slots_.clear();
    ids_.host.clear();
    ints_.host.clear();
    ok_.host.clear();
    ids_.Upload();
    ints_.Upload();
    ok_.Upload();
    names_.host = s.node_name_ids();
    names_.Upload();
    empty_name_id_ = s.strings().Find("");
  }

  /** The slot of label `key`, or -1 when no node has it. */
  int32_t SlotOf(const engine::Snapshot& s, const std::string& key) {
    const std::vector<int32_t>* column = s.LabelColumn(key);
    if (column == nullptr) return -1;
    int32_t key_id = s.strings().Find(key);
    auto it = slots_.find(key_id);
    if (it != slots_.end()) return it->second;
    int32_t slot = static_cast<int32_t>(slots_.size());
    slots_.emplace(key_id, slot);
    size_t off = static_cast<size_t>(slot) * n_;
    ids_.host.insert(ids_.host.end(), column->begin(), column->end());
    ints_.host.resize(off + n_, 0);
    ok_.host.resize(off + n_, 0);
    // Gt/Lt compare integers on the device: parse each node's value once here.
    for (engine::NodeIndex i = 0; i < n_; ++i) {
      int32_t id = (*column)[i];
      int64_t value = 0;
      if (id >= 0 && plugins::node_affinity::ParseGoInt64(s.strings().Name(id), &value)) {
        ints_.host[off + i] = value;
        ok_.host[off + i] = 1;
      }
    }
    Append(&ids_, off);
    Append(&ints_, off);
    Append(&ok_, off);
    return slot;
  }

  /** Node i joined: the slots (laid out with n nodes each) are dropped, to be laid out
   *  again as pods ask for keys; its name goes at the end. No backend work here. */
  void AddNode(const engine::Snapshot& s, engine::NodeIndex i) {
    n_ = s.num_nodes();
    slots_.clear();
    ids_.host.clear();
    ints_.host.clear();
    ok_.host.clear();
    names_.Push(s.node_name_ids()[i]);
  }

  /** Node i's values in every slot, from the snapshot's label columns. */
  void UpdateNode(const engine::Snapshot& s, engine::NodeIndex i) {
    if (names_.host[i] != s.node_name_ids()[i]) names_.Set(i, s.node_name_ids()[i]);  // it left or came back
    for (const auto& [key_id, slot] : slots_) {
      const std::vector<int32_t>* column = s.LabelColumn(s.strings().Name(key_id));
      const int32_t id = column ? (*column)[i] : engine::kNoId;
      int64_t value = 0;
      const bool ok = id >= 0 && plugins::node_affinity::ParseGoInt64(s.strings().Name(id), &value);
      const size_t at = static_cast<size_t>(slot) * n_ + i;
      ids_.Set(at, id);
      ints_.Set(at, ok ? value : 0);
      ok_.Set(at, ok ? 1 : 0);
    }
  }

  NaNodeView View() const {
    return NaNodeView{n_, ids_.ptr(), ints_.ptr(), ok_.ptr(), names_.ptr(), empty_name_id_};
  }

 private:
  template <typename T>
  static void Append(Column<T>* c, size_t off) {
    c->dev.resize(c->host.size());
    thrust::copy(c->host.begin() + off, c->host.end(), c->dev.begin() + off);
  }

  int32_t n_ = 0;
  int32_t empty_name_id_ = engine::kNoId;
  std::unordered_map<int32_t, int32_t> slots_;  // key id -> slot
  Column<int32_t> ids_;
  Column<int64_t> ints_;
  Column<uint8_t> ok_;
  Column<int32_t> names_;
};

/** A program under construction on the host, uploaded once complete. */
class ProgramBuffers {
 public:
  void Clear() {
    reqs_.clear();
    values_.clear();
    terms_.clear();
  }

  /** Appends the terms of `selector` that can match: non-empty and parsable (lazy
   *  parsing, as nodeaffinity.NodeSelector keeps the terms that parse). */
  void AddSelectorTerms(const engine::Snapshot& s, LabelSlots* slots, const NodeSelector& selector) {
    for (const NodeSelectorTerm& t : selector.terms) {
      if (plugins::node_affinity::IsEmptyTerm(t) || !plugins::node_affinity::Parses(t)) continue;
      AddTerm(s, slots, t, 0);
    }
  }

  /** Appends a parsable, non-empty term. */
  void AddTerm(const engine::Snapshot& s, LabelSlots* slots, const NodeSelectorTerm& t, int64_t weight) {
    NaTerm term{};
    term.weight = weight;
    term.label_begin = static_cast<int32_t>(reqs_.size());
    for (const NodeSelectorRequirement& r : t.match_expressions) reqs_.push_back(LabelReq(s, slots, r));
    term.label_count = static_cast<int32_t>(t.match_expressions.size());
    term.field_begin = static_cast<int32_t>(reqs_.size());
    for (const NodeSelectorRequirement& r : t.match_fields) reqs_.push_back(FieldReq(s, r));
    term.field_count = static_cast<int32_t>(t.match_fields.size());
    terms_.push_back(term);
  }

  /** spec.nodeSelector: every key present with exactly that value. */
  void AddEquals(const engine::Snapshot& s, LabelSlots* slots, const std::string& key, const std::string& value) {
    NaRequirement r{};
    r.slot = slots->SlotOf(s, key);
    if (r.slot < 0) {
      r.op = NaOp::kFalse;
    } else {
      r.op = NaOp::kIn;
      r.value_begin = AddValue(s, value);
      r.value_count = 1;
    }
    reqs_.push_back(r);
  }

  int32_t num_reqs() const { return static_cast<int32_t>(reqs_.size()); }
  int32_t num_terms() const { return static_cast<int32_t>(terms_.size()); }

  /** Uploads and returns the program with its pointers set (spans filled by the caller). */
  NaProgram Upload(NaProgram p) {
    kplace::KPLACE_BACKEND_NS::Upload(reqs_, &reqs_dev_);
    kplace::KPLACE_BACKEND_NS::Upload(values_, &values_dev_);
    kplace::KPLACE_BACKEND_NS::Upload(terms_, &terms_dev_);
    p.reqs = Ptr(reqs_dev_);
    p.values = Ptr(values_dev_);
    p.terms = Ptr(terms_dev_);
    return p;
  }

 private:
  int32_t AddValue(const engine::Snapshot& s, const std::string& value) {
    int32_t id = s.strings().Find(value);
    values_.push_back(id == engine::kNoId ? plugins::kNaNoValue : id);
    return static_cast<int32_t>(values_.size()) - 1;
  }

  NaRequirement LabelReq(const engine::Snapshot& s, LabelSlots* slots, const NodeSelectorRequirement& in) {
    NaRequirement r{};
    r.slot = slots->SlotOf(s, in.key);
    const bool absent_everywhere = r.slot < 0;
    if (in.op == "In" || in.op == "NotIn") {
      if (absent_everywhere) {
        r.op = in.op == "In" ? NaOp::kFalse : NaOp::kTrue;
      } else {
        r.op = in.op == "In" ? NaOp::kIn : NaOp::kNotIn;
        r.value_begin = static_cast<int32_t>(values_.size());
        for (const std::string& v : in.values) AddValue(s, v);
        r.value_count = static_cast<int32_t>(in.values.size());
      }
    } else if (in.op == "Exists") {
      r.op = absent_everywhere ? NaOp::kFalse : NaOp::kExists;
    } else if (in.op == "DoesNotExist") {
      r.op = absent_everywhere ? NaOp::kTrue : NaOp::kDoesNotExist;
    } else {  // Gt / Lt; the term parsed, so there is one integer value
      plugins::node_affinity::ParseGoInt64(in.values[0], &r.bound);
      r.op = absent_everywhere ? NaOp::kFalse : in.op == "Gt" ? NaOp::kGt : NaOp::kLt;
    }
    if (r.slot < 0) r.slot = 0;  // constants read no column
    return r;
  }

  NaRequirement FieldReq(const engine::Snapshot& s, const NodeSelectorRequirement& in) {
    NaRequirement r{};
    const bool in_op = in.op == "In";
    if (in.key == "metadata.name") {
      r.op = in_op ? NaOp::kNameIn : NaOp::kNameNotIn;
      r.value_begin = AddValue(s, in.values[0]);
      r.value_count = 1;
    } else {
      // Any other field reads as "" on a named node.
      bool equal = in.values[0].empty();
      r.op = (in_op ? equal : !equal) ? NaOp::kTrue : NaOp::kFalse;
    }
    return r;
  }

  std::vector<NaRequirement> reqs_;
  std::vector<int32_t> values_;
  std::vector<NaTerm> terms_;
  vector<NaRequirement> reqs_dev_;
  vector<int32_t> values_dev_;
  vector<NaTerm> terms_dev_;
};

/** An engine plugin whose Filter reads node labels and names through LabelSlots and no pods
 *  (NodeAffinity, DynamicResources): the node hooks keep its slots in step. */
class NodeSelectorPlugin : public engine::Plugin {
 public:
  // Columns of node objects only: nothing to undo.
  bool OnUnbind(const Pod&, engine::NodeIndex, const engine::Snapshot&) override { return true; }
  bool FilterReadsPods() const override { return false; }
  bool OnNodeUpdate(engine::NodeIndex node, const Node&, const engine::Snapshot& s) override {
    slots_.UpdateNode(s, node);
    return true;
  }
  // Slots are laid out node-major per key: they are laid out again, lazily, as pods ask.
  bool OnNodeAdd(engine::NodeIndex node, const engine::Snapshot& s) override {
    slots_.AddNode(s, node);
    return true;
  }
  void Prepare(const engine::Snapshot& s) override { slots_.Build(s); }

 protected:
  LabelSlots slots_;
};

}  // namespace kplace::KPLACE_BACKEND_NS
