#pragma once

#include <map>
#include <string>
#include <vector>

#include "config/config.h"

namespace outbox {

// The librdkafka properties the relay sets for a cluster, before the user's
// `kafka.properties` (which win). `message_timeout_ms` is derived from the
// shortest lease of the services sharing the producer: a delivery must end
// (ack or failure) before another relay may take the lease over.
std::map<std::string, std::string> ProducerProperties(const KafkaConfig& kafka,
                                                      const std::string& client_id,
                                                      int64_t min_lease_ms,
                                                      std::vector<std::string>* warnings);

}  // namespace outbox
