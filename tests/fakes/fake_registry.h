#pragma once

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/mutex.h"
#include "schema/schema_registry.h"

namespace outbox::testing {

// A Schema Registry in memory: subjects with their versions in order, ids
// shared by equal schemas, and a failure to answer with instead (set_failure:
// every request fails with it until cleared) and a hook run before each
// answer (set_before_answer: a slow registry under a fake clock). Counts
// requests. Thread-safe.
class FakeSchemaRegistry : public SchemaRegistry {
 public:
  // Adds `schema` as `subject`'s next version; returns its id.
  int Register(const std::string& subject, const std::string& schema,
               const std::string& type = "AVRO") {
    MutexLock lock(&mu_);
    int id = static_cast<int>(schemas_.size()) + 1;
    for (size_t i = 0; i < schemas_.size(); ++i)
      if (schemas_[i].schema == schema && schemas_[i].type == type) id = static_cast<int>(i) + 1;
    if (id == static_cast<int>(schemas_.size()) + 1) {
      RegisteredSchema r;
      r.id = id;
      r.type = type;
      r.schema = schema;
      schemas_.push_back(r);
    }
    subjects_[subject].push_back(id);
    return id;
  }
  void set_failure(Status failure) {
    MutexLock lock(&mu_);
    failure_ = std::move(failure);
  }
  void set_before_answer(std::function<void()> hook) {
    MutexLock lock(&mu_);
    before_answer_ = std::move(hook);
  }
  int requests() {
    MutexLock lock(&mu_);
    return requests_;
  }

  Status GetSubjectVersion(const std::string& subject, const std::string& version,
                           RegisteredSchema* out) override {
    BeforeAnswer();
    MutexLock lock(&mu_);
    ++requests_;
    if (!failure_.ok()) return failure_;
    auto it = subjects_.find(subject);
    if (it == subjects_.end()) return Status::Schema("subject " + subject + " not found");
    const size_t n = version == "latest" ? it->second.size() : std::stoul(version);
    if (n < 1 || n > it->second.size()) return Status::Schema("version " + version + " not found");
    *out = schemas_[static_cast<size_t>(it->second[n - 1] - 1)];
    out->subject = subject;
    out->version = static_cast<int>(n);
    return Status::Ok();
  }
  Status GetSchemaById(int32_t id, RegisteredSchema* out) override {
    BeforeAnswer();
    MutexLock lock(&mu_);
    ++requests_;
    if (!failure_.ok()) return failure_;
    if (id < 1 || id > static_cast<int32_t>(schemas_.size()))
      return Status::Schema("schema " + std::to_string(id) + " not found");
    *out = schemas_[static_cast<size_t>(id - 1)];
    return Status::Ok();
  }

 private:
  void BeforeAnswer() {
    std::function<void()> hook;
    {
      MutexLock lock(&mu_);
      hook = before_answer_;
    }
    if (hook) hook();
  }

  Mutex mu_;
  std::function<void()> before_answer_ GUARDED_BY(mu_);
  std::vector<RegisteredSchema> schemas_ GUARDED_BY(mu_);
  std::map<std::string, std::vector<int>> subjects_ GUARDED_BY(mu_);
  Status failure_ GUARDED_BY(mu_);
  int requests_ GUARDED_BY(mu_) = 0;
};

}  // namespace outbox::testing
