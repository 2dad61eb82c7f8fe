#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "common/status.h"

namespace outbox {

// A schema as a Schema Registry holds it.
struct RegisteredSchema {
  int32_t id = 0;
  std::string subject;  // "" when read by id
  int version = 0;      // 0 when read by id
  // The registry's schemaType: "AVRO" (also when the answer names none, as
  // Confluent's does for Avro), "JSON" or "PROTOBUF".
  std::string type = "AVRO";
  std::string schema;           // the schema's text
  bool has_references = false;  // it refers to schemas under other subjects
};

// The seam for a Schema Registry: the two reads of Confluent's REST API the
// relay makes (Karapace and Apicurio's Confluent mode answer them the same).
// The relay never registers a schema. Implementations are thread-safe.
//
// Errors, by what the relay does with them:
//  - kUnavailable: the registry did not answer in time, refused the
//    connection, answered 5xx, 408 or 429, or answered with something
//    that is not its API's JSON (a proxy's page, a redirect); the rows
//    wait and retry;
//  - kPermission: 401 or 403 (credentials); the rows wait, an operator acts;
//  - kSchema: the registry's own 404, no such subject, version or id; the
//    row cannot be sent;
//  - kInvalid: the registry's own error for another 4xx, or a 200 whose
//    JSON holds no schema.
class SchemaRegistry {
 public:
  virtual ~SchemaRegistry() = default;
  // GET /subjects/{subject}/versions/{version}; `version` is "latest" or a
  // version number.
  virtual Status GetSubjectVersion(const std::string& subject, const std::string& version,
                                   RegisteredSchema* out) = 0;
  // GET /schemas/ids/{id}.
  virtual Status GetSchemaById(int32_t id, RegisteredSchema* out) = 0;
};

using SchemaRegistryPtr = std::shared_ptr<SchemaRegistry>;

// The registry's answer to one of the two reads: HTTP status and body as a
// Status and, on 200, the schema in *out (subject, version and id as far as
// the answer gives them). `what` names the request in messages
// ("subject orders-value version latest"). Pure; thread-safe.
Status ReadRegistryAnswer(int http_status, const std::string& body, const std::string& what,
                          RegisteredSchema* out);

}  // namespace outbox
