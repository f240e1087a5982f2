#include "tests/conformance/storage_conformance.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <set>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/base/absl_compat.h"
#include "core/base/check.h"
#include "core/ports/random.h"

namespace kairos::storage_test {
namespace {

std::string esc(std::string_view s) { return "\"" + absl::CHexEscape(absl_sv(s)) + "\""; }

std::string render(const Model& m) {
  std::string out = "{";
  for (const auto& [k, v] : m) absl::StrAppend(&out, esc(k), ":", esc(v), " ");
  return out + "}";
}

std::string render(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) absl::StrAppend(&out, "\n    ", l);
  return out;
}

constexpr int kMaxAttempts = 1000;

}  // namespace

// ---------------------------------------------------------------- ModelTxn

std::optional<std::string> ModelTxn::get(std::string_view key) {
  check_key_limits(key);
  auto it = data_.find(key);
  if (it == data_.end()) return std::nullopt;
  return it->second;
}

std::vector<KeyValue> ModelTxn::scan(std::string_view begin, std::string_view end,
                                     std::size_t limit, Direction direction) {
  KAIROS_CHECK(limit > 0);
  std::vector<KeyValue> all;
  for (const auto& [k, v] : data_)
    if (k >= begin && (end.empty() || k < end)) all.push_back({k, v});
  if (direction == Direction::kReverse) std::reverse(all.begin(), all.end());
  if (all.size() > limit) all.resize(limit);
  return all;
}

void ModelTxn::put(std::string_view key, std::string_view value) {
  KAIROS_CHECK(mode_ == TxnMode::kReadWrite);
  check_key_limits(key, value);
  data_.insert_or_assign(std::string(key), std::string(value));
}

void ModelTxn::erase(std::string_view key) {
  KAIROS_CHECK(mode_ == TxnMode::kReadWrite);
  check_key_limits(key);
  auto it = data_.find(key);
  if (it != data_.end()) data_.erase(it);
}

void ModelTxn::erase_range(std::string_view begin, std::string_view end) {
  KAIROS_CHECK(mode_ == TxnMode::kReadWrite);
  for (auto it = data_.begin(); it != data_.end();) {
    if (it->first >= begin && (end.empty() || it->first < end))
      it = data_.erase(it);
    else
      ++it;
  }
}

// ---------------------------------------------------------------- driving

TxnBody spec_body(const TxnSpec& spec, std::vector<std::string>* out) {
  return [&spec, out](Txn& t) -> absl::Status {
    out->clear();
    for (const Op& op : spec.ops) {
      switch (op.kind) {
        case Op::kGet: {
          auto v = t.get(op.a);
          out->push_back(absl::StrCat("get ", esc(op.a), " -> ", v ? esc(*v) : "<none>"));
          break;
        }
        case Op::kScan: {
          auto kvs =
              t.scan(op.a, op.b, op.limit, op.reverse ? Direction::kReverse : Direction::kForward);
          std::string line = absl::StrCat(op.reverse ? "rscan [" : "scan [", esc(op.a), ", ",
                                          esc(op.b), ") limit ", op.limit, " ->");
          for (const auto& kv : kvs) absl::StrAppend(&line, " ", esc(kv.key), "=", esc(kv.value));
          out->push_back(std::move(line));
          break;
        }
        case Op::kPut:
          t.put(op.a, op.value);
          break;
        case Op::kErase:
          t.erase(op.a);
          break;
        case Op::kEraseRange:
          t.erase_range(op.a, op.b);
          break;
      }
    }
    if (spec.abort) return absl::FailedPreconditionError("the spec asked this body to abort");
    return absl::OkStatus();
  };
}

TxnResult run_once(StoreHarness& h, TxnBody body, TxnMode mode) {
  std::optional<TxnResult> result;
  h.store().transact(
      std::move(body), [&result](TxnResult r) { result = std::move(r); }, mode);
  h.run_until([&] { return result.has_value(); });
  return *result;
}

TxnResult run_retrying(StoreHarness& h, const TxnBody& body, TxnMode mode) {
  TxnResult r;
  for (int attempt = 0; attempt < kMaxAttempts; ++attempt) {
    r = run_once(h, body, mode);
    if (r.outcome != CommitOutcome::kConflict && r.outcome != CommitOutcome::kUnavailable) break;
  }
  return r;
}

namespace {
TxnResult answer(StoreHarness& h, const TxnBody& body, TxnMode mode) {
  TxnResult r;
  for (int attempt = 0; attempt < kMaxAttempts; ++attempt) {
    r = run_once(h, body, mode);
    if (r.outcome == CommitOutcome::kCommitted || r.outcome == CommitOutcome::kAborted) break;
  }
  return r;
}
}  // namespace

TxnResult commit_idempotent(StoreHarness& h, const TxnBody& body) {
  return answer(h, body, TxnMode::kReadWrite);
}

Model read_all(StoreHarness& h) {
  Model m;
  const TxnResult r = answer(
      h,
      [&m](Txn& t) {
        m.clear();
        for (auto& kv : t.scan("", "", std::size_t{1} << 30)) m.emplace(kv.key, kv.value);
        return absl::OkStatus();
      },
      TxnMode::kReadOnly);
  KAIROS_CHECK_MSG(r.committed(), "read_all: no answer from the store");
  return m;
}

void clear_all(StoreHarness& h) {
  const TxnResult r = commit_idempotent(h, [](Txn& t) {
    t.erase_range("", "");
    return absl::OkStatus();
  });
  KAIROS_CHECK_MSG(r.committed(), "clear_all: no answer from the store");
}

namespace {

// Runs `spec` on the store and on the model; "" when they agree. Updates
// `model` to the store's state afterwards.
std::string run_and_compare(StoreHarness& h, const TxnSpec& spec, Model& model) {
  const TxnMode mode = spec.read_only ? TxnMode::kReadOnly : TxnMode::kReadWrite;
  Model after = model;
  std::vector<std::string> expected;
  ModelTxn mt(after, h.clock().now(), mode);
  const absl::Status expected_status = spec_body(spec, &expected)(mt);
  std::vector<std::string> got;
  const TxnResult r = run_retrying(h, spec_body(spec, &got), mode);
  switch (r.outcome) {
    case CommitOutcome::kCommitted:
      if (!expected_status.ok()) return "committed although the body returned an error";
      if (got != expected)
        return absl::StrCat("reads differ from the model; store:", render(got),
                            "\n  model:", render(expected));
      if (!spec.read_only) model = std::move(after);
      return "";
    case CommitOutcome::kAborted:
      if (r.status != expected_status)
        return absl::StrCat("aborted with ", r.status.ToString(), ", expected ",
                            expected_status.ToString());
      if (got != expected)
        return absl::StrCat("reads differ from the model; store:", render(got),
                            "\n  model:", render(expected));
      return "";
    case CommitOutcome::kUnknown: {
      const Model now = read_all(h);
      if (now == model) return "";
      if (expected_status.ok() && !spec.read_only && now == after) {
        model = std::move(after);
        return "";
      }
      return absl::StrCat("after kUnknown the store is neither the state before nor after: ",
                          render(now));
    }
    case CommitOutcome::kConflict:
    case CommitOutcome::kUnavailable:
      return absl::StrCat("no answer after ", kMaxAttempts, " attempts: ", r.status.ToString());
  }
  return "invalid outcome";
}

std::string compare_state(StoreHarness& h, const Model& model) {
  const Model now = read_all(h);
  if (now == model) return "";
  return absl::StrCat("store contents differ from the model; store: ", render(now),
                      "\n  model: ", render(model));
}

Op get(std::string k) { return Op{Op::kGet, std::move(k)}; }
Op put(std::string k, std::string v) { return Op{Op::kPut, std::move(k), "", std::move(v)}; }
Op erase(std::string k) { return Op{Op::kErase, std::move(k)}; }
Op erase_range(std::string b, std::string e) {
  return Op{Op::kEraseRange, std::move(b), std::move(e)};
}
Op scan(std::string b, std::string e, std::size_t limit, bool reverse) {
  return Op{Op::kScan, std::move(b), std::move(e), "", limit, reverse};
}

// Runs specs in order; stops at the first violation, naming the step.
std::string run_steps(StoreHarness& h, const std::vector<TxnSpec>& specs, Model& model,
                      std::string_view what) {
  for (std::size_t i = 0; i < specs.size(); ++i) {
    std::string v = run_and_compare(h, specs[i], model);
    if (!v.empty()) return absl::StrCat(h.name(), ": ", absl_sv(what), " step ", i, ": ", v);
  }
  std::string v = compare_state(h, model);
  if (!v.empty()) return absl::StrCat(h.name(), ": ", absl_sv(what), ": ", v);
  return "";
}

}  // namespace

// ---------------------------------------------------------------- checks

std::string check_basic_ops(StoreHarness& h) {
  clear_all(h);
  Model model;
  std::vector<TxnSpec> specs = {
      {{put("a", "1"), put("b", "2"), put("e", "")}},
      {{get("a"), get("b"), get("c"), get("e")}, true},
      {{put("a", "3"), erase("b"), erase("c"), get("a"), get("b")}},
      {{get("a"), get("b"), get("e")}, true},
      {{put(std::string("\x00", 1), "zero"), put("\xff", "ff")}},
      {{get(std::string("\x00", 1)), get("\xff"), scan("", "", 10, false)}, true},
  };
  return run_steps(h, specs, model, "basic ops");
}

std::string check_scans(StoreHarness& h) {
  clear_all(h);
  Model model;
  const std::vector<std::string> keys = {std::string("\x00", 1),
                                         std::string("\x00"
                                                     "a",
                                                     2),
                                         "\x01",
                                         "a",
                                         std::string("a\x00", 2),
                                         std::string("a\x00\x00", 3),
                                         "a\x01",
                                         "ab",
                                         "abc",
                                         "b",
                                         "b\xff",
                                         "ba",
                                         "m",
                                         "\xff",
                                         "\xff\xff"};
  const std::vector<std::string> bounds = {
      "",     std::string("\x00", 1), "a", std::string("a\x00", 2), "ab", "b", "c",
      "\xff", "\xff\xff\xff"};
  TxnSpec fill;
  for (std::size_t i = 0; i < keys.size(); ++i) fill.ops.push_back(put(keys[i], std::to_string(i)));
  TxnSpec scans;
  scans.read_only = true;
  for (const auto& b : bounds)
    for (const auto& e : bounds)
      for (std::size_t limit : {1, 2, 3, 100})
        for (bool reverse : {false, true}) scans.ops.push_back(scan(b, e, limit, reverse));
  // The same scans inside a writing transaction see its own writes.
  TxnSpec own = scans;
  own.read_only = false;
  own.ops.insert(own.ops.begin(), {put("aa", "new"), erase("ab"), erase_range("b", "ba"),
                                   put("b\x01", "inside-erased"), erase_range("\xff", "")});
  return run_steps(h, {fill, scans, own, scans}, model, "scans");
}

std::string check_read_your_writes(StoreHarness& h) {
  clear_all(h);
  Model model;
  std::vector<TxnSpec> specs = {
      {{put("k1", "a"), put("k2", "b"), put("k3", "c"), put("z", "z")}},
      {{put("k1", "A"), get("k1"), erase("k2"), get("k2"), erase_range("k", "l"), get("k1"),
        get("k3"), scan("", "", 10, false), put("k2", "again"), get("k2"), scan("k", "l", 10, true),
        erase_range("", ""), scan("", "", 10, false), get("z"), put("y", "y"),
        scan("", "", 10, true)}},
      {{get("k2"), get("y"), get("z"), scan("", "", 10, false)}, true},
  };
  return run_steps(h, specs, model, "read-your-writes");
}

std::string check_abort_leaves_no_trace(StoreHarness& h) {
  clear_all(h);
  Model model;
  std::vector<TxnSpec> specs = {
      {{put("a", "1"), put("b", "2"), put("c", "3")}},
      {{put("a", "X"), erase("b"), erase_range("c", ""), put("new", "n"), get("a"),
        scan("", "", 10, false)},
       false,
       true},
      {{get("a"), get("b"), get("c"), get("new")}, true},
      {{erase_range("", ""), get("a")}, false, true},
      {{get("a"), scan("", "", 10, true)}, true, true},  // read-only bodies abort too
  };
  return run_steps(h, specs, model, "abort leaves no trace");
}

std::string check_read_only(StoreHarness& h) {
  clear_all(h);
  Model model;
  std::vector<TxnSpec> specs = {
      {{get("a"), scan("", "", 5, false)}, true},
      {{put("a", "1"), put("b", "2")}},
      {{get("a"), get("b"), scan("a", "b", 5, false), scan("", "", 1, true)}, true},
  };
  return run_steps(h, specs, model, "read-only");
}

std::string check_now(StoreHarness& h) {
  for (absl::Duration step : {absl::ZeroDuration(), absl::Hours(1), absl::Seconds(-30)}) {
    h.clock().advance(step);
    const absl::Time expected = h.clock().now();
    for (TxnMode mode : {TxnMode::kReadWrite, TxnMode::kReadOnly}) {
      absl::Time first, second;
      const TxnResult r = answer(
          h,
          [&](Txn& t) {
            first = t.now();
            second = t.now();
            return absl::OkStatus();
          },
          mode);
      if (!r.committed()) return absl::StrCat(h.name(), ": now(): ", absl_sv(to_string(r.outcome)));
      if (first != expected || second != expected)
        return absl::StrCat(h.name(), ": Txn::now() is ", absl::FormatTime(first), " then ",
                            absl::FormatTime(second), ", the store clock says ",
                            absl::FormatTime(expected));
    }
  }
  return "";
}

std::string check_limits(StoreHarness& h) {
  clear_all(h);
  const std::string max_key(kMaxKeySize, 'k');
  const std::string max_key_ff = std::string(kMaxKeySize - 1, 'k') + "\xff";
  std::string big(std::size_t{1} << 20, '\0');
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 131 % 251);
  std::string huge(kMaxValueSize, 'h');
  huge.front() = 'H';
  huge.back() = 'T';
  TxnResult r = commit_idempotent(h, [&](Txn& t) {
    t.put(max_key, "max");
    t.put(max_key_ff, big);
    t.put("huge", huge);
    return absl::OkStatus();
  });
  if (!r.committed()) return absl::StrCat(h.name(), ": limits put: ", r.status.ToString());
  std::string v;
  r = answer(
      h,
      [&](Txn& t) {
        auto a = t.get(max_key);
        auto b = t.get(max_key_ff);
        auto c = t.get("huge");
        auto s = t.scan(std::string(kMaxKeySize - 1, 'k'), "", 5);
        v.clear();
        if (a != "max") v += "max-size key lost; ";
        if (b != big) v += "1 MiB value differs; ";
        if (c != huge) v += "kMaxValueSize value differs; ";
        if (s.size() != 2 || s[0].key != max_key || s[1].key != max_key_ff)
          v += "scan over max-size keys wrong; ";
        return absl::OkStatus();
      },
      TxnMode::kReadOnly);
  if (!r.committed()) return absl::StrCat(h.name(), ": limits read: ", r.status.ToString());
  return v.empty() ? "" : absl::StrCat(h.name(), ": ", v);
}

std::string check_model(StoreHarness& h, const std::vector<TxnSpec>& specs) {
  clear_all(h);
  Model model;
  return run_steps(h, specs, model, "model");
}

namespace {
std::string random_key(Random& rng) {
  static const char kAlphabet[] = {'\x00', 'a', 'b', '\xff'};
  std::string k;
  const auto n = 1 + rng.below(3);
  for (std::uint64_t i = 0; i < n; ++i) k.push_back(kAlphabet[rng.below(4)]);
  return k;
}
std::string random_bound(Random& rng) { return rng.chance(1, 4) ? "" : random_key(rng); }
}  // namespace

std::string check_model_random(StoreHarness& h, std::uint64_t seed, int txns) {
  Random rng(seed);
  std::vector<TxnSpec> specs;
  for (int i = 0; i < txns; ++i) {
    TxnSpec spec;
    spec.read_only = rng.chance(1, 5);
    spec.abort = rng.chance(1, 8);
    const auto n = rng.below(8);
    for (std::uint64_t j = 0; j < n; ++j) {
      Op op;
      op.kind = static_cast<Op::Kind>(rng.below(spec.read_only ? 2 : 5));
      op.a =
          op.kind == Op::kScan || op.kind == Op::kEraseRange ? random_bound(rng) : random_key(rng);
      op.b = random_bound(rng);
      op.value = std::to_string(rng.below(100));
      op.limit = 1 + rng.below(5);
      op.reverse = rng.chance(1, 2);
      spec.ops.push_back(std::move(op));
    }
    specs.push_back(std::move(spec));
  }
  return check_model(h, specs);
}

std::string check_concurrent_increments(StoreHarness& h, int n) {
  clear_all(h);
  if (!commit_idempotent(h, [](Txn& t) {
         t.put("counter", "0");
         return absl::OkStatus();
       }).committed())
    return "increments: cannot set up";
  int committed = 0, unknown = 0, outstanding = n;
  std::string violation;
  std::vector<int> attempts(static_cast<std::size_t>(n), 0);
  std::function<void(int)> submit = [&](int i) {
    h.store().transact(
        [i](Txn& t) {
          const auto v = t.get("counter");
          KAIROS_CHECK(v.has_value());
          const int next = std::stoi(*v) + 1;
          t.put("counter", std::to_string(next));
          t.put(absl::StrFormat("inc/%04d", i), std::to_string(next));
          return absl::OkStatus();
        },
        [&, i](TxnResult r) {
          switch (r.outcome) {
            case CommitOutcome::kCommitted:
              ++committed;
              break;
            case CommitOutcome::kUnknown:
              ++unknown;
              break;
            case CommitOutcome::kConflict:
            case CommitOutcome::kUnavailable:
              if (++attempts[static_cast<std::size_t>(i)] < kMaxAttempts) return submit(i);
              violation = "increments: no answer after retries";
              break;
            case CommitOutcome::kAborted:
              violation = "increments: unexpected abort";
              break;
          }
          --outstanding;
        });
  };
  for (int i = 0; i < n; ++i) submit(i);  // all in flight together
  h.run_until([&] { return outstanding == 0; });
  if (!violation.empty()) return absl::StrCat(h.name(), ": ", violation);
  const Model state = read_all(h);
  const int counter = std::stoi(state.at("counter"));
  std::set<std::string> seen;
  int markers = 0;
  for (const auto& [k, v] : state) {
    if (k.rfind("inc/", 0) != 0) continue;
    ++markers;
    if (!seen.insert(v).second)
      return absl::StrCat(h.name(), ": two committed increments read the same counter (", v,
                          "): a lost update");
  }
  if (counter < committed || counter > committed + unknown)
    return absl::StrCat(h.name(), ": counter is ", counter, " after ", committed, " committed and ",
                        unknown, " unknown increments");
  if (markers != counter)
    return absl::StrCat(h.name(), ": counter is ", counter, " but ", markers,
                        " increments left their marker (not atomic)");
  return "";
}

std::string check_crash_keeps_acknowledged(StoreHarness& h, std::uint64_t seed) {
  if (!h.can_crash()) return "";
  clear_all(h);
  Random rng(seed);
  std::set<int> acked;
  int next_id = 0;
  std::vector<int> answers(20, 0);  // outlives every callback of the check
  for (int round = 0; round < 20; ++round) {
    const int k = static_cast<int>(rng.between(1, 10));
    int& answered = answers[static_cast<std::size_t>(round)];
    for (int j = 0; j < k; ++j) {
      const int id = next_id++;
      h.store().transact(
          [id](Txn& t) {
            t.put(absl::StrFormat("d/%06d", id), "x");
            return absl::OkStatus();
          },
          [&, id](TxnResult r) {
            ++answered;
            if (r.committed()) acked.insert(id);
          });
    }
    // Either let this round be acknowledged, or crash before its sync.
    if (rng.chance(1, 2)) h.run_until([&] { return answered == k; });
    h.crash();
    const Model state = read_all(h);
    for (int id : acked)
      if (!state.count(absl::StrFormat("d/%06d", id)))
        return absl::StrCat(h.name(), ": acknowledged commit d/", id, " lost in a crash");
  }
  return "";
}

}  // namespace kairos::storage_test
