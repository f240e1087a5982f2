#include "prod/runners/output_ring.h"

#include <algorithm>

namespace kairos {

void OutputRing::append(const char* data, std::size_t n) {
  total_ += n;
  if (capacity_ == 0 || n == 0) return;
  if (buf_.empty()) buf_.resize(capacity_);
  if (n >= capacity_) {  // only the chunk's own tail survives
    buf_.assign(data + (n - capacity_), capacity_);
    head_ = 0;
    size_ = capacity_;
    return;
  }
  std::size_t at = (head_ + size_) % capacity_;
  const std::size_t first = std::min(n, capacity_ - at);
  std::copy(data, data + first, buf_.begin() + static_cast<std::ptrdiff_t>(at));
  std::copy(data + first, data + n, buf_.begin());
  const std::size_t grown = size_ + n;
  if (grown > capacity_) {
    head_ = (head_ + (grown - capacity_)) % capacity_;
    size_ = capacity_;
  } else {
    size_ = grown;
  }
}

std::string OutputRing::last(std::size_t n, bool whole_characters) const {
  n = std::min(n, size_);
  std::string out;
  out.reserve(n);
  if (n > 0) {
    const std::size_t from = (head_ + (size_ - n)) % capacity_;
    const std::size_t first = std::min(n, capacity_ - from);
    out.append(buf_, from, first);
    out.append(buf_, 0, n - first);
  }
  if (whole_characters && n < total_) {
    // Up to three continuation bytes (10xxxxxx) of a cut sequence.
    std::size_t cut = 0;
    while (cut < 3 && cut < out.size() && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80)
      ++cut;
    out.erase(0, cut);
  }
  return out;
}

}  // namespace kairos
