-- The example service's own table: one row per payment its handler
-- records, in the same transaction as the event's inbox row. The service's
-- database needs the inbox's tables beside it (inbox_schema.sql, installed
-- in share/outbox-inbox/), and its consumer account these grants:
--   grant select, insert, update, delete on payments_db.t_inbox to 'payments'@'%'
--   (the same on t_inbox_aggregate and t_inbox_parked)
--   grant select, insert, delete on payments_db.t_payment to 'payments'@'%'
create table t_payment (
  id bigint primary key auto_increment,
  event_key varchar(128) not null,   -- the event's idempotency key (t_inbox.event_key)
  order_id bigint not null,          -- the event's aggregate_id
  outbox_id bigint not null,
  key idx_payment_order (order_id)
);
