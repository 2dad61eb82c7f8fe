-- Accounts and demo extras for the compose demo. The image's entrypoint runs
-- the files of /docker-entrypoint-initdb.d once, as root, in the database
-- MYSQL_DATABASE (order_db), when the MySQL data volume is created:
-- 10-t_outbox.sql (the repository's sql/t_outbox.sql) creates the
-- table, then this file runs.
--
-- The passwords here are for this local demo only. ORDER_DB_PASSWORD in
-- docker-compose.yml defaults to the relay's one; change both together (and
-- `docker compose down -v` to re-run the init files).

-- Optional column the relay uses when present (docs/CONFIG.md): `dead list` then
-- shows why a row went DEAD. (`topic` and `headers` are the other two.)
ALTER TABLE t_outbox ADD COLUMN last_error varchar(1024) NULL;

-- The relay: only what it needs on its one table (README "minimal grants").
-- SELECT to scan and claim, UPDATE to claim and settle, DELETE because
-- relay.yaml sets retention.sent_days.
-- mysql_native_password: Debian's MySQL Connector/C++ 1.1 runs on MariaDB
-- Connector/C, which is simplest with it against MySQL 8.0.
CREATE USER 'relay'@'%' IDENTIFIED WITH mysql_native_password BY 'relay-dev-password';
GRANT SELECT, UPDATE, DELETE ON order_db.t_outbox TO 'relay'@'%';

-- The demo's "order service": writes outbox rows (in its own transactions).
CREATE USER 'order_app'@'%' IDENTIFIED WITH mysql_native_password BY 'order-app-dev-password';
GRANT SELECT, INSERT, UPDATE, DELETE ON order_db.* TO 'order_app'@'%';

FLUSH PRIVILEGES;
