/* A librdkafka plugin (plugin.library.paths) that does nothing: a service
 * whose kafka.properties name it where it is not yet installed cannot make
 * its producer until it is (tests/integration/fleet_faults_test.cc). */
#include <librdkafka/rdkafka.h>

rd_kafka_resp_err_t conf_init(rd_kafka_conf_t *conf, void **plug_opaquep, char *errstr,
                              size_t errstr_size);

rd_kafka_resp_err_t conf_init(rd_kafka_conf_t *conf, void **plug_opaquep, char *errstr,
                              size_t errstr_size) {
  (void)conf;
  (void)plug_opaquep;
  (void)errstr;
  (void)errstr_size;
  return RD_KAFKA_RESP_ERR_NO_ERROR;
}
