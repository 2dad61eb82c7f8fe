-- Schema and accounts for the compose demo (docker-entrypoint-initdb.d runs
-- this once, as root, when the MySQL data volume is created).
--
-- The passwords here are for this local demo only. ORDER_DB_PASSWORD in
-- docker-compose.yml defaults to the relay's one; change both together (and
-- `docker compose down -v` to re-run this file).

CREATE DATABASE IF NOT EXISTS order_db CHARACTER SET utf8mb4 COLLATE utf8mb4_0900_ai_ci;
USE order_db;

-- The table contract of SPEC §2, unchanged.
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

-- Optional columns the relay uses when present (SPEC §2):
-- ALTER TABLE t_outbox ADD COLUMN last_error varchar(512) NULL,
--                      ADD COLUMN topic varchar(249) NULL,
--                      ADD COLUMN headers json NULL;

-- The relay: only what it needs on its one table. SELECT to scan and claim,
-- UPDATE to claim and settle, DELETE for retention of SENT rows.
-- mysql_native_password: Debian's MySQL Connector/C++ 1.1 runs on MariaDB
-- Connector/C, which is simplest with it against MySQL 8.0.
CREATE USER 'relay'@'%' IDENTIFIED WITH mysql_native_password BY 'relay-dev-password';
GRANT SELECT, UPDATE, DELETE ON order_db.t_outbox TO 'relay'@'%';

-- The demo's "order service": writes outbox rows (in its own transactions).
CREATE USER 'order_app'@'%' IDENTIFIED WITH mysql_native_password BY 'order-app-dev-password';
GRANT SELECT, INSERT, UPDATE, DELETE ON order_db.* TO 'order_app'@'%';

FLUSH PRIVILEGES;
