create table t_aggregate_effect (
  aggregate_type varchar(32) not null,
  aggregate_id bigint not null,
  applied int not null,                -- +1 per event applied
  last_outbox_id bigint not null,      -- highest outbox_id applied
  last_version bigint not null default 0, -- version of the last event applied (aggregate_version, else 0)
  out_of_order int not null default 0, -- events applied below last_outbox_id (version_check: none)
  stale int not null default 0,        -- events recorded in the inbox but not applied: older than the last applied
  primary key (aggregate_type, aggregate_id)
);
