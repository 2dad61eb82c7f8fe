#include "kafka/kafka_conf.h"

namespace outbox {

rd_kafka_conf_t* NewKafkaConf(const std::map<std::string, std::string>& props, std::string* error) {
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  char errstr[512];
  for (const auto& [k, v] : props) {
    if (rd_kafka_conf_set(conf, k.c_str(), v.c_str(), errstr, sizeof(errstr)) != RD_KAFKA_CONF_OK) {
      *error = "kafka property " + k + ": " + errstr;
      rd_kafka_conf_destroy(conf);
      return nullptr;
    }
  }
  return conf;
}

}  // namespace outbox
