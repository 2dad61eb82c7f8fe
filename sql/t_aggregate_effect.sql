create table t_aggregate_effect (
  aggregate_type varchar(32) not null,
  aggregate_id bigint not null,
  applied int not null,                -- +1 per event applied
  last_outbox_id bigint not null,      -- highest outbox_id applied
  out_of_order int not null default 0, -- events applied below last_outbox_id (version_check: none)
  primary key (aggregate_type, aggregate_id)
);
