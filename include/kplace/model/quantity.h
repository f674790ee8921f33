#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include <optional>

namespace kplace {

/** @brief An exact Kubernetes resource quantity, held as a count of nano-units.
 *
 * Kubernetes keeps quantities as exact decimals; every value that the API
 * accepts is a whole number of nano-units once rounded up at 1e-9, so a
 * 128-bit count of nano-units adds and compares exactly.
 */
class Quantity {
 public:
  Quantity() = default;
  static Quantity FromNanos(__int128 nanos) { Quantity q; q.nanos_ = nanos; return q; }
  static Quantity FromUnits(int64_t units) { return FromNanos(static_cast<__int128>(units) * 1000000000); }

  /** @brief Parses "500m", "2Gi", "1.5", "1e3", "12E", ... exactly.
   *  @return nullopt when `text` is not a quantity. */
  static std::optional<Quantity> Parse(std::string_view text);

  /** @brief ceil(q * 1000), saturated to int64 (Kubernetes' MilliValue). */
  int64_t MilliValue() const;
  /** @brief ceil(q), saturated to int64 (Kubernetes' Value). */
  int64_t Value() const;
  __int128 nanos() const { return nanos_; }
  bool IsZero() const { return nanos_ == 0; }

  Quantity& operator+=(const Quantity& o) { nanos_ += o.nanos_; return *this; }
  friend Quantity operator+(Quantity a, const Quantity& b) { return a += b; }
  friend bool operator<(const Quantity& a, const Quantity& b) { return a.nanos_ < b.nanos_; }
  friend bool operator==(const Quantity& a, const Quantity& b) { return a.nanos_ == b.nanos_; }
  friend bool operator!=(const Quantity& a, const Quantity& b) { return a.nanos_ != b.nanos_; }

  /** @brief A decimal rendering (for messages and round-trips), e.g. "1500m". */
  std::string ToString() const;

 private:
  __int128 nanos_ = 0;
};

}  // namespace kplace
