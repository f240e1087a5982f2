// OutputRing: the last `capacity` bytes of a stream, in fixed memory.
//
// Purpose. A job may print without bound; its runner keeps only the tail
// (RunOutcome::output, the log line). The ring allocates `capacity` bytes
// once, on the first append, and never more: appending n bytes costs O(n)
// (at most O(capacity) copies for a huge chunk) and never reallocates.
// total() counts every byte ever appended, so the caller knows how much fell
// off the front.
#pragma once

#include <cstddef>
#include <string>

namespace kairos {

class OutputRing {
 public:
  explicit OutputRing(std::size_t capacity) : capacity_(capacity) {}

  void append(const char* data, std::size_t n);

  // The last min(n, size()) bytes, oldest first. With `whole_characters`, a
  // tail that starts inside a UTF-8 sequence (because the front fell off)
  // drops that sequence's continuation bytes.
  std::string last(std::size_t n, bool whole_characters = true) const;

  std::size_t size() const { return size_; }
  std::size_t capacity() const { return capacity_; }
  std::size_t total() const { return total_; }
  // Bytes appended that are no longer held.
  std::size_t dropped() const { return total_ - size_; }

 private:
  std::size_t capacity_;
  std::string buf_;       // capacity_ bytes once anything was appended
  std::size_t head_ = 0;  // index of the oldest byte held
  std::size_t size_ = 0;
  std::size_t total_ = 0;
};

}  // namespace kairos
