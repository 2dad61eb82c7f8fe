-- The inbox library's tables (docs/CONSUMERS.md, "Tables"), in the order
-- they apply, for a service's database or its migrations: t_inbox.sql,
-- t_inbox_retention_index.sql, t_inbox_aggregate.sql, t_inbox_parked.sql
-- in one file. Every statement ends with a semicolon at the end of its line
-- and no comment holds one, so a tool that splits on them finds the four
-- statements. outbox::inbox::CreateTables runs the same statements.

-- t_inbox.sql
create table t_inbox (
  id bigint primary key,
  event_key varchar(128) not null,
  event_type varchar(64) not null,
  consumer varchar(64) not null,
  processed_at datetime not null,
  unique key uk_consumer_event (consumer, event_key)
);

-- t_inbox_retention_index.sql
alter table t_inbox add key idx_consumer_processed_at (consumer, processed_at);

-- t_inbox_aggregate.sql
create table t_inbox_aggregate (
  consumer varchar(64) not null,             -- t_inbox.consumer
  aggregate_type varchar(32) not null,
  aggregate_id bigint not null,
  last_version bigint not null default 0,    -- aggregate_version of the newest event applied (0: none carried one)
  last_outbox_id bigint not null default 0,  -- outbox_id of the newest event applied
  stale bigint not null default 0,           -- events recorded in the inbox but not applied: older than the last applied
  updated_at datetime not null,
  primary key (consumer, aggregate_type, aggregate_id)
);

-- t_inbox_parked.sql
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
