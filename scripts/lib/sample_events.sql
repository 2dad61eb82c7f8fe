-- Three orders going Created -> Paid -> Shipped, each event in its own
-- transaction, as a service would write them. aggregate_version (the
-- optional column scripts/quickstart adds) is the version in event_key; the
-- relay sends it as a header and the consumer's version check gates on it.
INSERT INTO t_outbox (id, aggregate_type, aggregate_id, event_type, event_key, payload, status, next_retry_at, created_at, updated_at, aggregate_version) VALUES
 (1001, 'Order', 42, 'OrderCreated', 'OrderCreated-42-1', '{"orderId":42,"status":"CREATED","amount":99.5}', 'NEW', NOW(), NOW(), NOW(), 1);
INSERT INTO t_outbox (id, aggregate_type, aggregate_id, event_type, event_key, payload, status, next_retry_at, created_at, updated_at, aggregate_version) VALUES
 (1002, 'Order', 43, 'OrderCreated', 'OrderCreated-43-1', '{"orderId":43,"status":"CREATED","amount":12.0}', 'NEW', NOW(), NOW(), NOW(), 1);
INSERT INTO t_outbox (id, aggregate_type, aggregate_id, event_type, event_key, payload, status, next_retry_at, created_at, updated_at, aggregate_version) VALUES
 (1003, 'Order', 42, 'OrderPaid', 'OrderPaid-42-2', '{"orderId":42,"status":"PAID"}', 'NEW', NOW(), NOW(), NOW(), 2);
INSERT INTO t_outbox (id, aggregate_type, aggregate_id, event_type, event_key, payload, status, next_retry_at, created_at, updated_at, aggregate_version) VALUES
 (1004, 'Order', 44, 'OrderCreated', 'OrderCreated-44-1', '{"orderId":44,"status":"CREATED","amount":7.25}', 'NEW', NOW(), NOW(), NOW(), 1);
INSERT INTO t_outbox (id, aggregate_type, aggregate_id, event_type, event_key, payload, status, next_retry_at, created_at, updated_at, aggregate_version) VALUES
 (1005, 'Order', 43, 'OrderPaid', 'OrderPaid-43-2', '{"orderId":43,"status":"PAID"}', 'NEW', NOW(), NOW(), NOW(), 2);
INSERT INTO t_outbox (id, aggregate_type, aggregate_id, event_type, event_key, payload, status, next_retry_at, created_at, updated_at, aggregate_version) VALUES
 (1006, 'Order', 42, 'OrderShipped', 'OrderShipped-42-3', '{"orderId":42,"status":"SHIPPED"}', 'NEW', NOW(), NOW(), NOW(), 3);
INSERT INTO t_outbox (id, aggregate_type, aggregate_id, event_type, event_key, payload, status, next_retry_at, created_at, updated_at, aggregate_version) VALUES
 (1007, 'Order', 44, 'OrderPaid', 'OrderPaid-44-2', '{"orderId":44,"status":"PAID"}', 'NEW', NOW(), NOW(), NOW(), 2);
INSERT INTO t_outbox (id, aggregate_type, aggregate_id, event_type, event_key, payload, status, next_retry_at, created_at, updated_at, aggregate_version) VALUES
 (1008, 'Order', 43, 'OrderShipped', 'OrderShipped-43-3', '{"orderId":43,"status":"SHIPPED"}', 'NEW', NOW(), NOW(), NOW(), 3);
