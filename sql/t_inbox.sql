create table t_inbox (
  id bigint primary key,
  event_key varchar(128) not null,
  event_type varchar(64) not null,
  consumer varchar(64) not null,
  processed_at datetime not null,
  unique key uk_consumer_event (consumer, event_key)
);
