/* When librdkafka reports a queued message whose message.timeout.ms ran out
 * while every broker is down (docs/RELIABILITY.md, "A broker outage").
 *
 * One producer (acks=all, linger.ms=1, message.timeout.ms=2500, as the relay
 * sets them for lease_ms 5000) against librdkafka's mock cluster (one
 * broker, 4 partitions): 1,000 messages/s for 3 s, the broker down from
 * 1.5 s to 11.5 s. Prints how many messages were acknowledged or failed,
 * and the longest time from a produce to its delivery report.
 * With `purge`, the program does what the relay does: while the broker is
 * down it takes back what is queued (rd_kafka_purge, queue flag only).
 *
 *   cc -O1 -o /tmp/librdkafka_queued_timeout bench/librdkafka_queued_timeout.c -lrdkafka
 *   /tmp/librdkafka_queued_timeout [idempotent 1|0] [purge]
 */
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define kMax 4000
static double t0;
static double sent_at[kMax], report_at[kMax];
static int report_err[kMax];

static double Now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec / 1e9 - t0;
}

static void OnReport(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
  long i = (long)m->_private;
  (void)rk;
  (void)opaque;
  report_at[i] = Now();
  report_err[i] = m->err;
}

static rd_kafka_t *Producer(const char *bootstrap, const char *idempotent) {
  char err[512];
  rd_kafka_conf_t *c = rd_kafka_conf_new();
  rd_kafka_conf_set(c, "bootstrap.servers", bootstrap, err, sizeof err);
  rd_kafka_conf_set(c, "enable.idempotence", idempotent, err, sizeof err);
  rd_kafka_conf_set(c, "acks", "all", err, sizeof err);
  rd_kafka_conf_set(c, "linger.ms", "1", err, sizeof err);
  rd_kafka_conf_set(c, "message.timeout.ms", "2500", err, sizeof err);
  rd_kafka_conf_set_dr_msg_cb(c, OnReport);
  return rd_kafka_new(RD_KAFKA_PRODUCER, c, err, sizeof err);
}

int main(int argc, char **argv) {
  const int idempotent = argc > 1 ? atoi(argv[1]) : 1;
  const int purge = argc > 2 && strcmp(argv[2], "purge") == 0;
  char err[512];
  rd_kafka_t *mock_rk = rd_kafka_new(RD_KAFKA_PRODUCER, rd_kafka_conf_new(), err, sizeof err);
  rd_kafka_mock_cluster_t *mock = rd_kafka_mock_cluster_new(mock_rk, 1);
  rd_kafka_mock_topic_create(mock, "t", 4, 1);
  rd_kafka_t *rk = Producer(rd_kafka_mock_cluster_bootstraps(mock), idempotent ? "true" : "false");
  struct timespec start;
  clock_gettime(CLOCK_MONOTONIC, &start);
  t0 = start.tv_sec + start.tv_nsec / 1e9;
  int sent = 0, down = 0, up = 0;
  while (Now() < 25) {
    const double t = Now();
    while (t < 3 && sent < kMax && sent < (int)(t * 1000)) {
      char key[8], value[16];
      snprintf(key, sizeof key, "%d", sent % 37);
      snprintf(value, sizeof value, "m%d", sent);
      sent_at[sent] = t;
      rd_kafka_producev(rk, RD_KAFKA_V_TOPIC("t"), RD_KAFKA_V_KEY(key, strlen(key)),
                        RD_KAFKA_V_VALUE(value, strlen(value)),
                        RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                        RD_KAFKA_V_OPAQUE((void *)(long)sent), RD_KAFKA_V_END);
      sent++;
    }
    if (!down && t >= 1.5) down = !rd_kafka_mock_broker_set_down(mock, 1);
    if (!up && t >= 11.5) up = !rd_kafka_mock_broker_set_up(mock, 1);
    if (purge && down && !up) rd_kafka_purge(rk, RD_KAFKA_PURGE_F_QUEUE);
    rd_kafka_poll(rk, 1);
  }
  int acked = 0, timed_out = 0, purged = 0, late = 0;
  double longest = 0;
  for (int i = 0; i < sent; i++) {
    const double s = report_at[i] - sent_at[i];
    if (s > longest) longest = s;
    if (s > 3.5) late++; /* message.timeout.ms and librdkafka's 1 s scan */
    if (report_err[i] == 0) acked++;
    if (report_err[i] == RD_KAFKA_RESP_ERR__MSG_TIMED_OUT) timed_out++;
    if (report_err[i] == RD_KAFKA_RESP_ERR__PURGE_QUEUE) purged++;
  }
  printf("idempotent=%d purge=%d produced=%d acked=%d timed_out=%d purged=%d "
         "reported_after_3.5s=%d longest_s=%.2f\n",
         idempotent, purge, sent, acked, timed_out, purged, late, longest);
  rd_kafka_destroy(rk);
  rd_kafka_mock_cluster_destroy(mock);
  rd_kafka_destroy(mock_rk);
  return 0;
}
