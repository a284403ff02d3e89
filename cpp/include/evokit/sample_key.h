// SamplingInfo's key: a short list of int64s with the first kept inline. A
// Gaussian key is one noise offset or stream id and a CMA-ES key one stream
// key, so most keys never touch the heap; a GA key (the seeds of a lineage)
// grows on the heap like a std::vector. 16 bytes against a std::vector's 24
// plus a heap block, which is what lets `evokit update` keep ten million
// samples in bounded memory (formats/update_records.h).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <iterator>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

namespace evokit {

class SampleKey {
 public:
  using value_type = std::int64_t;
  using size_type = std::size_t;
  using iterator = std::int64_t*;
  using const_iterator = const std::int64_t*;

  SampleKey() noexcept = default;
  SampleKey(std::initializer_list<std::int64_t> values) { assign(values.begin(), values.end()); }
  SampleKey(const std::vector<std::int64_t>& values) { assign(values.begin(), values.end()); }  // NOLINT
  template <class It>
  SampleKey(It first, It last) {
    assign(first, last);
  }
  SampleKey(const SampleKey& other) { assign(other.begin(), other.end()); }
  SampleKey(SampleKey&& other) noexcept { take(other); }
  SampleKey& operator=(const SampleKey& other) {
    if (this != &other) assign(other.begin(), other.end());
    return *this;
  }
  SampleKey& operator=(SampleKey&& other) noexcept {
    if (this != &other) {
      release();
      take(other);
    }
    return *this;
  }
  SampleKey& operator=(std::initializer_list<std::int64_t> values) {
    assign(values.begin(), values.end());
    return *this;
  }
  SampleKey& operator=(const std::vector<std::int64_t>& values) {
    assign(values.begin(), values.end());
    return *this;
  }
  ~SampleKey() { release(); }

  // The same values as a std::vector (for maps and containers keyed by one).
  operator std::vector<std::int64_t>() const { return {begin(), end()}; }  // NOLINT
  std::vector<std::int64_t> to_vector() const { return {begin(), end()}; }

  template <class It>
  void assign(It first, It last) {
    const auto n = static_cast<std::size_t>(std::distance(first, last));
    size_ = 0;
    reserve(n);
    std::copy(first, last, data());
    size_ = static_cast<std::uint32_t>(n);
  }
  void clear() noexcept { size_ = 0; }
  void reserve(std::size_t n) {
    if (n <= capacity()) return;
    auto* grown = new std::int64_t[n];
    if (size_ != 0) std::memcpy(grown, data(), size_ * sizeof(std::int64_t));
    release_heap();
    heap_ = grown;
    capacity_ = static_cast<std::uint32_t>(n);
  }
  void push_back(std::int64_t value) {
    if (size_ == capacity()) reserve(std::max<std::size_t>(2, 2 * static_cast<std::size_t>(size_)));
    data()[size_++] = value;
  }

  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  std::int64_t* data() noexcept { return capacity_ == 0 ? &inline_ : heap_; }
  const std::int64_t* data() const noexcept { return capacity_ == 0 ? &inline_ : heap_; }
  iterator begin() noexcept { return data(); }
  iterator end() noexcept { return data() + size_; }
  const_iterator begin() const noexcept { return data(); }
  const_iterator end() const noexcept { return data() + size_; }
  std::int64_t& operator[](std::size_t i) noexcept { return data()[i]; }
  std::int64_t operator[](std::size_t i) const noexcept { return data()[i]; }
  std::int64_t at(std::size_t i) const {
    if (i >= size_) throw std::out_of_range("key index " + std::to_string(i) + " of a key of " + std::to_string(size_));
    return data()[i];
  }
  std::int64_t front() const noexcept { return data()[0]; }
  std::int64_t back() const noexcept { return data()[size_ - 1]; }

  friend bool operator==(const SampleKey& a, const SampleKey& b) noexcept {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }
  friend bool operator!=(const SampleKey& a, const SampleKey& b) noexcept { return !(a == b); }
  friend bool operator<(const SampleKey& a, const SampleKey& b) noexcept {
    return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end());
  }
  friend bool operator==(const SampleKey& a, const std::vector<std::int64_t>& b) noexcept {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }
  friend bool operator==(const std::vector<std::int64_t>& a, const SampleKey& b) noexcept { return b == a; }
  friend bool operator!=(const SampleKey& a, const std::vector<std::int64_t>& b) noexcept { return !(a == b); }
  friend bool operator!=(const std::vector<std::int64_t>& a, const SampleKey& b) noexcept { return !(b == a); }

 private:
  std::size_t capacity() const noexcept { return capacity_ == 0 ? 1 : capacity_; }
  void release_heap() noexcept {
    if (capacity_ != 0) delete[] heap_;
  }
  void release() noexcept {
    release_heap();
    capacity_ = 0;
    size_ = 0;
  }
  void take(SampleKey& other) noexcept {
    size_ = other.size_;
    capacity_ = other.capacity_;
    if (capacity_ == 0) {
      inline_ = other.inline_;
    } else {
      heap_ = other.heap_;
    }
    other.capacity_ = 0;
    other.size_ = 0;
  }

  union {
    std::int64_t inline_ = 0;  // capacity_ == 0: room for one value
    std::int64_t* heap_;       // capacity_ > 0: capacity_ values
  };
  std::uint32_t size_ = 0;
  std::uint32_t capacity_ = 0;
};

static_assert(sizeof(SampleKey) == 16, "a key is an inline value or a heap pointer, and two counts");

}  // namespace evokit
