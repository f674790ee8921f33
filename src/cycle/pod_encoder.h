#pragma once
// A byte-exact encoding of pod fields for signatures (batch.cc, opportunistic_batch.cc).
#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kplace/model/objects.h"

namespace kplace::cycle {

// A byte-exact, unambiguous encoding: strings are length-prefixed, optionals and lists
// carry a presence flag or a count, so distinct pods never encode alike.
// With `expect`, it compares instead of writing: Matches() tells whether the encoding
// would equal `*expect`, without building it.
class Encoder {
 public:
  Encoder() = default;
  explicit Encoder(const std::string* expect) : expect_(expect) {}
  std::string Take() { return std::move(out_); }
  bool Matches() const { return same_ && pos_ == expect_->size(); }

  void Raw(const void* p, size_t n) {
    if (expect_ == nullptr) {
      out_.append(static_cast<const char*>(p), n);
      return;
    }
    if (same_ && (pos_ + n > expect_->size() || std::memcmp(expect_->data() + pos_, p, n) != 0)) same_ = false;
    pos_ += n;
  }
  void U32(uint32_t v) { Raw(&v, sizeof v); }
  void I64(int64_t v) { Raw(&v, sizeof v); }
  void Bool(bool v) {
    const char c = v ? '\1' : '\0';
    Raw(&c, 1);
  }
  void Str(const std::string& s) {
    U32(static_cast<uint32_t>(s.size()));
    Raw(s.data(), s.size());
  }
  void Q(const Quantity& q) {
    __int128 n = q.nanos();
    Raw(&n, sizeof n);
  }
  template <typename T, typename F>
  void List(const std::vector<T>& v, F f) {
    U32(static_cast<uint32_t>(v.size()));
    for (const T& e : v) f(e);
  }
  template <typename T, typename F>
  void Opt(const std::optional<T>& v, F f) {
    Bool(v.has_value());
    if (v) f(*v);
  }
  void Strings(const std::vector<std::string>& v) {
    List(v, [&](const std::string& s) { Str(s); });
  }
  void StrMap(const std::map<std::string, std::string>& m) {
    U32(static_cast<uint32_t>(m.size()));
    for (const auto& [k, v] : m) {
      Str(k);
      Str(v);
    }
  }
  void Resources(const ResourceList& r) {
    U32(static_cast<uint32_t>(r.size()));
    for (const auto& [k, v] : r) {
      Str(k);
      Q(v);
    }
  }
  void Selector(const LabelSelector& s) {
    StrMap(s.match_labels);
    List(s.match_expressions, [&](const LabelSelectorRequirement& r) {
      Str(r.key);
      Str(r.op);
      Strings(r.values);
    });
  }
  void NodeTerm(const NodeSelectorTerm& t) {
    auto req = [&](const NodeSelectorRequirement& r) {
      Str(r.key);
      Str(r.op);
      Strings(r.values);
    };
    List(t.match_expressions, req);
    List(t.match_fields, req);
  }
  void PodTerm(const PodAffinityTerm& t) {
    Opt(t.label_selector, [&](const LabelSelector& s) { Selector(s); });
    Strings(t.namespaces);
    Opt(t.namespace_selector, [&](const LabelSelector& s) { Selector(s); });
    Str(t.topology_key);
    Strings(t.match_label_keys);
    Strings(t.mismatch_label_keys);
  }
  void PodAffinityOf(const PodAffinity& a) {
    List(a.required, [&](const PodAffinityTerm& t) { PodTerm(t); });
    List(a.preferred, [&](const WeightedPodAffinityTerm& w) {
      I64(w.weight);
      PodTerm(w.term);
    });
  }
  void ContainerOf(const Container& c) {
    Str(c.name);
    Str(c.image);
    Resources(c.requests);
    Resources(c.limits);
    Opt(c.restart_policy, [&](const std::string& s) { Str(s); });
    List(c.ports, [&](const ContainerPort& p) {
      I64(p.container_port);
      I64(p.host_port);
      Str(p.protocol);
      Str(p.host_ip);
    });
  }

 private:
  std::string out_;
  const std::string* expect_ = nullptr;
  size_t pos_ = 0;
  bool same_ = true;
};

}  // namespace kplace::cycle
