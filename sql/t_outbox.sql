create table t_outbox (
  id bigint primary key,
  aggregate_type varchar(32) not null,   -- Order
  aggregate_id bigint not null,          -- orderId
  event_type varchar(64) not null,       -- OrderPaid
  event_key varchar(128) not null,       -- idempotency key: eventType + aggregateId + version
  payload json not null,
  status varchar(16) not null,           -- NEW / SENDING / SENT / DEAD
  retry_count int not null default 0,
  next_retry_at datetime not null,
  created_at datetime not null,
  updated_at datetime not null,
  unique key uk_event_key (event_key),
  key idx_status_retry (status, next_retry_at)
);
