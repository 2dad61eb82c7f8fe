#include "outbox_check.h"

#include <algorithm>
#include <ctime>
#include <set>
#include <sstream>
#include <tuple>
#include <unordered_map>

namespace outbox::check {

namespace {

void Note(Report* r, const std::string& finding, const std::string& example, size_t limit) {
  auto& v = r->samples[finding];
  if (v.size() < limit) v.push_back(example);
}

std::optional<std::string> Header(const Message& m, const std::string& name) {
  for (const auto& [k, v] : m.headers)
    if (k == name) return v;
  return std::nullopt;
}

std::optional<int64_t> ParseId(const std::string& s) {
  if (s.empty() || s.size() > 19) return std::nullopt;
  size_t i = s[0] == '-' ? 1 : 0;
  if (i == s.size()) return std::nullopt;
  for (size_t j = i; j < s.size(); ++j)
    if (s[j] < '0' || s[j] > '9') return std::nullopt;
  return std::stoll(s);
}

std::string Where(const Message& m) {
  return m.topic + "/" + std::to_string(m.partition) + "@" + std::to_string(m.offset);
}

std::string ExpectedTopic(const Row& row, const Expectations& e) {
  if (row.topic && !row.topic->empty()) return *row.topic;
  if (auto it = e.topic_overrides.find(row.event_type); it != e.topic_overrides.end())
    return it->second;
  return ExpandTopic(e.topic_template, row, e.service);
}

// The row's `headers` column as (name, value) pairs; nullopt if it is not a
// JSON object of strings (the relay makes such a row DEAD, it never publishes).
std::optional<std::vector<std::pair<std::string, std::string>>> ExtraHeaders(const Row& row) {
  std::vector<std::pair<std::string, std::string>> out;
  if (!row.headers || row.headers->empty() || *row.headers == "null") return out;
  nlohmann::json h = nlohmann::json::parse(*row.headers, nullptr, /*allow_exceptions=*/false);
  if (!h.is_object()) return std::nullopt;
  for (auto it = h.begin(); it != h.end(); ++it) {
    if (!it.value().is_string()) return std::nullopt;
    out.emplace_back(it.key(), it.value().get<std::string>());
  }
  return out;
}

// Compares one message with the row it claims to carry; returns the fields
// that differ.
std::vector<std::string> Differences(const Row& row, const Message& m, const Expectations& e) {
  std::vector<std::string> diff;
  if (!m.key || *m.key != std::to_string(row.aggregate_id)) diff.push_back("key");
  if (m.topic != ExpectedTopic(row, e)) diff.push_back("topic");
  if (e.check_value && m.value != row.payload) diff.push_back("value");
  if (m.key) {
    if (auto it = e.partition_counts.find(m.topic);
        it != e.partition_counts.end() && it->second > 0)
      if (m.partition != JavaPartition(*m.key, it->second)) diff.push_back("partition");
  }
  std::vector<std::pair<std::string, std::string>> want = {
      {"outbox_id", std::to_string(row.id)},
      {"event_key", row.event_key},
      {"event_type", row.event_type},
      {"aggregate_type", row.aggregate_type},
      {"created_at", Rfc3339Utc(row.created_at_unix)}};
  if (auto extra = ExtraHeaders(row)) {
    for (auto& h : *extra) want.push_back(std::move(h));
  } else {
    diff.push_back("headers_column");
  }
  for (const auto& [name, value] : want) {
    auto got = Header(m, name);
    if (!got || *got != value) diff.push_back("header:" + name);
  }
  return diff;
}

}  // namespace

int32_t JavaPartition(const std::string& key, int32_t partitions) {
  const uint32_t seed = 0x9747b28c, m = 0x5bd1e995;
  const int r = 24;
  const auto* data = reinterpret_cast<const unsigned char*>(key.data());
  const uint32_t len = static_cast<uint32_t>(key.size());
  uint32_t h = seed ^ len;
  uint32_t i = 0;
  for (; i + 4 <= len; i += 4) {
    uint32_t k = uint32_t(data[i]) | (uint32_t(data[i + 1]) << 8) | (uint32_t(data[i + 2]) << 16) |
                 (uint32_t(data[i + 3]) << 24);
    k *= m;
    k ^= k >> r;
    k *= m;
    h *= m;
    h ^= k;
  }
  switch (len - i) {
    case 3:
      h ^= uint32_t(data[i + 2]) << 16;
      [[fallthrough]];
    case 2:
      h ^= uint32_t(data[i + 1]) << 8;
      [[fallthrough]];
    case 1:
      h ^= uint32_t(data[i]);
      h *= m;
  }
  h ^= h >> 13;
  h *= m;
  h ^= h >> 15;
  return static_cast<int32_t>((h & 0x7fffffff) % static_cast<uint32_t>(partitions));
}

std::string Rfc3339Utc(int64_t unix_seconds) {
  std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[40];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string ExpandTopic(const std::string& tmpl, const Row& row, const std::string& service) {
  std::string out;
  for (size_t i = 0; i < tmpl.size();) {
    if (tmpl[i] == '{') {
      size_t close = tmpl.find('}', i);
      if (close != std::string::npos) {
        std::string name = tmpl.substr(i + 1, close - i - 1);
        if (name == "aggregate_type") {
          out += row.aggregate_type;
          i = close + 1;
          continue;
        }
        if (name == "event_type") {
          out += row.event_type;
          i = close + 1;
          continue;
        }
        if (name == "service") {
          out += service;
          i = close + 1;
          continue;
        }
      }
    }
    out += tmpl[i++];
  }
  return out;
}

Report Analyze(const std::vector<Row>& rows, const std::vector<Message>& messages,
               const Options& o) {
  Report r;
  r.rows = static_cast<int64_t>(rows.size());
  r.messages = static_cast<int64_t>(messages.size());

  std::unordered_map<int64_t, const Row*> by_id;
  by_id.reserve(rows.size());
  for (const Row& row : rows) {
    ++r.rows_by_status[row.status];
    by_id[row.id] = &row;
  }

  // Messages per row, in the order read (per partition: offset order).
  std::unordered_map<int64_t, std::vector<const Message*>> copies;
  for (const Message& m : messages) {
    auto hid = Header(m, "outbox_id");
    std::optional<int64_t> id = hid ? ParseId(*hid) : std::nullopt;
    auto it = id ? by_id.find(*id) : by_id.end();
    if (it == by_id.end()) {
      ++r.unmatched_messages;
      Note(&r, "unmatched_messages",
           Where(m) + (hid ? " outbox_id=" + *hid : " without outbox_id header"), o.sample);
      continue;
    }
    copies[*id].push_back(&m);
    std::vector<std::string> diff = Differences(*it->second, m, o.expect);
    if (!diff.empty()) {
      ++r.mismatched_messages;
      std::string fields;
      for (const auto& f : diff) {
        ++r.mismatches_by_field[f];
        fields += (fields.empty() ? "" : ",") + f;
      }
      Note(&r, "mismatched_messages", "id " + std::to_string(*id) + " " + Where(m) + ": " + fields,
           o.sample);
    }
  }

  for (const Row& row : rows) {
    auto it = copies.find(row.id);
    size_t n = it == copies.end() ? 0 : it->second.size();
    const bool sent = row.status == "SENT";
    if (row.status == "SENDING") ++r.sending_rows;
    if (row.status != "SENT" && row.status != "NEW" && row.status != "SENDING" &&
        row.status != "DEAD") {
      ++r.unknown_status_rows;
      Note(&r, "unknown_status_rows", std::to_string(row.id) + " " + row.status, o.sample);
    }
    if (n == 0) {
      if (sent) {
        ++r.lost;
        Note(&r, "lost", std::to_string(row.id), o.sample);
      } else {
        ++r.never_published;
        Note(&r, "never_published", std::to_string(row.id) + " " + row.status, o.sample);
      }
      continue;
    }
    ++r.distinct_published;
    if (!sent) {
      ++r.published_unsent;
      Note(&r, "published_unsent", std::to_string(row.id) + " " + row.status, o.sample);
    }
    if (n > 1) {
      ++r.duplicated_events;
      r.duplicate_copies += static_cast<int64_t>(n - 1);
      Note(&r, "duplicates", std::to_string(row.id) + " x" + std::to_string(n), o.sample);
    }
  }

  if (o.check_order) {
    // Rows of each aggregate, in id order.
    std::map<std::pair<std::string, int64_t>, std::vector<const Row*>> aggregates;
    for (const Row& row : rows) aggregates[{row.aggregate_type, row.aggregate_id}].push_back(&row);
    for (auto& [agg, list] : aggregates) {
      std::sort(list.begin(), list.end(), [](const Row* a, const Row* b) { return a->id < b->id; });
      const std::string name = agg.first + "/" + std::to_string(agg.second);

      // An event published while an older one of its aggregate never was
      // (and is not SENT either: a lost one is counted as lost).
      const Row* blocker = nullptr;
      for (const Row* row : list) {
        bool published = copies.count(row->id) > 0;
        if (blocker && published) {
          ++r.overtaken;
          Note(&r, "overtaken",
               name + ": " + std::to_string(row->id) + " published while " +
                   std::to_string(blocker->id) + " (" + blocker->status + ") never was",
               o.sample);
        }
        if (!blocker && !published && row->status != "SENT" &&
            !(row->status == "DEAD" && o.dead_policy_skip))
          blocker = row;
      }

      // First occurrences per (topic, partition), in offset order.
      std::map<std::pair<std::string, int32_t>, std::vector<std::pair<int64_t, int64_t>>> placed;
      for (const Row* row : list) {
        auto it = copies.find(row->id);
        if (it == copies.end()) continue;
        for (const Message* m : it->second)
          placed[{m->topic, m->partition}].push_back({m->offset, row->id});
      }
      std::map<std::string, int> partitions_per_topic;
      for (const auto& [tp, v] : placed) ++partitions_per_topic[tp.first];
      for (const auto& [topic, count] : partitions_per_topic) {
        if (count > 1) {
          ++r.split_aggregates;
          Note(&r, "split_aggregates",
               name + " on " + std::to_string(count) + " partitions of " + topic, o.sample);
        }
      }
      for (auto& [tp, v] : placed) {
        std::sort(v.begin(), v.end());
        std::set<int64_t> seen;
        int64_t max_id = INT64_MIN;
        for (const auto& [offset, id] : v) {
          if (!seen.insert(id).second) continue;  // a later copy: the consumer dedupes it
          if (id < max_id) {
            ++r.order_violations;
            Note(&r, "order_violations",
                 name + ": " + std::to_string(id) + " at " + tp.first + "/" +
                     std::to_string(tp.second) + "@" + std::to_string(offset) + " after " +
                     std::to_string(max_id),
                 o.sample);
          }
          max_id = std::max(max_id, id);
        }
      }
    }
  }

  // The verdict.
  auto fail = [&](int64_t n, const std::string& what) {
    if (n > 0) r.failures.push_back(std::to_string(n) + " " + what);
  };
  if (o.expect_rows && *o.expect_rows != r.rows)
    r.failures.push_back("the table has " + std::to_string(r.rows) + " rows, expected " +
                         std::to_string(*o.expect_rows));
  for (const auto& [tp, low] : o.truncated_partitions) r.deleted_by_retention += low;
  if (r.deleted_by_retention > 0) {
    std::string which;
    for (const auto& [tp, low] : o.truncated_partitions)
      which += (which.empty() ? "" : ", ") + tp + " from offset " + std::to_string(low);
    r.failures.push_back(std::to_string(r.deleted_by_retention) +
                         " message(s) deleted by the broker's retention before they were read (" +
                         which + "): lost counts include them and prove nothing");
  }
  fail(r.lost, "lost event(s): SENT in the table but not in Kafka");
  if (o.expect_all_sent) {
    int64_t sent = r.rows_by_status.count("SENT") ? r.rows_by_status.at("SENT") : 0;
    fail(r.rows - sent, "row(s) not SENT");
  } else if (o.forbid_sending) {
    fail(r.sending_rows, "row(s) left in SENDING");
  }
  fail(r.order_violations, "per-aggregate order violation(s)");
  fail(r.split_aggregates, "aggregate(s) split across partitions");
  fail(r.overtaken, "event(s) published ahead of an unpublished older event of their aggregate");
  fail(r.mismatched_messages, "message(s) not matching their row (key/headers/topic/value)");
  fail(r.unmatched_messages, "message(s) with no matching row");
  if (o.max_duplicates && r.duplicate_copies > *o.max_duplicates)
    r.failures.push_back(std::to_string(r.duplicate_copies) + " duplicate copies, more than the " +
                         std::to_string(*o.max_duplicates) + " allowed");
  return r;
}

nlohmann::json ToJson(const Report& r) {
  nlohmann::json j;
  j["verdict"] = r.ok() ? "OK" : "VIOLATIONS";
  j["failures"] = r.failures;
  j["rows"] = r.rows;
  j["messages"] = r.messages;
  j["rows_by_status"] = r.rows_by_status;
  j["distinct_published"] = r.distinct_published;
  j["lost"] = r.lost;
  j["never_published"] = r.never_published;
  j["published_unsent"] = r.published_unsent;
  j["duplicate_copies"] = r.duplicate_copies;
  j["duplicated_events"] = r.duplicated_events;
  j["order_violations"] = r.order_violations;
  j["split_aggregates"] = r.split_aggregates;
  j["overtaken"] = r.overtaken;
  j["mismatched_messages"] = r.mismatched_messages;
  j["mismatches_by_field"] = r.mismatches_by_field;
  j["unmatched_messages"] = r.unmatched_messages;
  j["sending_rows"] = r.sending_rows;
  j["unknown_status_rows"] = r.unknown_status_rows;
  j["deleted_by_retention"] = r.deleted_by_retention;
  j["samples"] = r.samples;
  return j;
}

std::string Summary(const Report& r) {
  std::ostringstream out;
  out << "rows " << r.rows << " (";
  bool first = true;
  for (const auto& [status, n] : r.rows_by_status) {
    out << (first ? "" : ", ") << status << " " << n;
    first = false;
  }
  out << "), messages " << r.messages << ", events published " << r.distinct_published << "\n";
  out << "lost " << r.lost << ", never published " << r.never_published
      << ", published but not SENT " << r.published_unsent << "\n";
  out << "duplicates: " << r.duplicate_copies << " extra cop"
      << (r.duplicate_copies == 1 ? "y" : "ies") << " of " << r.duplicated_events << " event(s)\n";
  out << "order: " << r.order_violations << " violation(s), " << r.split_aggregates
      << " split aggregate(s), " << r.overtaken << " overtaken\n";
  out << "mismatched messages " << r.mismatched_messages;
  for (const auto& [f, n] : r.mismatches_by_field) out << " " << f << "=" << n;
  out << ", unmatched messages " << r.unmatched_messages << "\n";
  for (const auto& [finding, examples] : r.samples) {
    out << "  " << finding << ":";
    for (const auto& e : examples) out << " [" << e << "]";
    out << "\n";
  }
  if (r.ok()) {
    out << "verdict: OK\n";
  } else {
    out << "verdict: VIOLATIONS\n";
    for (const auto& f : r.failures) out << "  - " << f << "\n";
  }
  return out.str();
}

}  // namespace outbox::check
