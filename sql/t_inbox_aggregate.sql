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
