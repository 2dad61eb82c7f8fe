#pragma once

#include <librdkafka/rdkafka.h>

#include <map>
#include <string>

namespace outbox {

// A new librdkafka configuration with every property of `props` set, for
// rd_kafka_new (the producer's and the fleet's consumers). Null when
// librdkafka refuses a property: then nothing is left to destroy and
// *error is "kafka property <name>: <librdkafka's words>", as librdkafka
// gives them (some end with a newline).
rd_kafka_conf_t* NewKafkaConf(const std::map<std::string, std::string>& props, std::string* error);

}  // namespace outbox
