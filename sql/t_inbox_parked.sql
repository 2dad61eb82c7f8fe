create table t_inbox_parked (
  id bigint primary key auto_increment,
  consumer varchar(64) not null,           -- t_inbox.consumer
  reason varchar(16) not null,             -- version_gap: waits for an earlier version, undeliverable: its dead letter was refused
  detail varchar(1024) not null,           -- the version awaited, or the broker's refusal and why it was a dead letter
  source_topic varchar(249) not null,      -- where the message was read
  source_partition int not null,
  source_offset bigint not null,
  event_key varchar(128) null,             -- the event's headers, when they parsed (version_gap: always)
  event_type varchar(64) null,
  aggregate_type varchar(32) null,
  aggregate_id bigint null,
  aggregate_version bigint null,
  outbox_id bigint null,
  message_key varbinary(1024) null,        -- the raw key (first 1024 bytes)
  headers mediumblob null,                 -- every header, one "name: value" line each
  payload longblob null,                   -- the message value
  parked_at datetime not null,
  unique key uk_parked_source (consumer, source_topic, source_partition, source_offset),
  key idx_parked_aggregate (consumer, aggregate_type, aggregate_id, aggregate_version),
  key idx_parked_event (consumer, event_key),
  key idx_parked_reason (consumer, reason, parked_at)
);
