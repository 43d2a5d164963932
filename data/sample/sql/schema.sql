-- Spruce Mall (云杉商城) sample schema: customers, orders, shipments, refunds.
-- ONE portable file, applied unchanged to PostgreSQL 15, MariaDB 10.11 and SQLite 3.
-- See data/sample/COMPANY.md for the rows and scripts/backends/*.sh for how it is loaded.
--
-- Portability rules (keep them when editing):
--  * Keys are VARCHAR(n) (MariaDB cannot index an unbounded TEXT column), free text is TEXT or VARCHAR.
--  * Money is NUMERIC(12,2). PostgreSQL/MariaDB keep the scale ('899.00'); SQLite has NUMERIC
--    *affinity* only and stores 899.00 as the integer 899 and 308.5 as a REAL. To read money the
--    same way everywhere, cast on the engine: PG `amount::text`, MariaDB `CAST(amount AS CHAR)`,
--    SQLite `printf('%.2f', amount)` all give '899.00'.
--  * TIMESTAMPS ARE TEXT, not TIMESTAMP/DATETIME: always ISO-8601 UTC, second precision, with a
--    literal Z, exactly 20 characters, e.g. '2026-11-28T09:15:00Z'. The three engines disagree on
--    date/time types (timestamptz vs DATETIME without zone vs no type at all) and on how their
--    drivers decode them; a fixed-width UTC string decodes as a String on all three with one Rust
--    code path, and because the width is fixed, string order == time order, so range filters work
--    as plain comparisons with a bound string in the same form: placed_at >= '2026-11-21T00:00:00Z'.
--  * Every table carries business_line (retail | wholesale). There is no ACL table: the adapter
--    binds the caller's business lines as the permission predicate (business_line IN (...)).
--  * Character set: PostgreSQL database is UTF8, MariaDB database default is utf8mb4 /
--    utf8mb4_unicode_ci (tables inherit it), SQLite is always UTF-8. Chinese text round-trips.
--
-- Re-running this file drops and re-creates the tables (children first), so seeding is idempotent.

DROP TABLE IF EXISTS refunds;
DROP TABLE IF EXISTS shipments;
DROP TABLE IF EXISTS orders;
DROP TABLE IF EXISTS customers;

CREATE TABLE customers (
  id            VARCHAR(16)  NOT NULL PRIMARY KEY,   -- 'C1001'
  name          VARCHAR(100) NOT NULL,               -- '张伟 Zhang Wei'
  business_line VARCHAR(32)  NOT NULL,               -- 'retail' | 'wholesale'
  city          VARCHAR(64)  NOT NULL                -- '上海', 'Hangzhou'
);

CREATE TABLE orders (
  order_no      VARCHAR(16)    NOT NULL PRIMARY KEY, -- 'SO20261001' (SO + 8 digits)
  customer_id   VARCHAR(16)    NOT NULL REFERENCES customers (id),
  business_line VARCHAR(32)    NOT NULL,
  placed_at     VARCHAR(20)    NOT NULL,             -- ISO-8601 UTC text, see header
  item          VARCHAR(200)   NOT NULL,             -- '无线降噪耳机 Wireless earbuds'
  amount        NUMERIC(12, 2) NOT NULL,             -- CNY
  currency      VARCHAR(3)     NOT NULL,             -- 'CNY'
  status        VARCHAR(32)    NOT NULL,             -- paid | delivered | refunded | payment_failed | in_transit | rejected_on_delivery
  status_note   TEXT                                 -- why, e.g. 'payment timeout 支付超时'; NULL when nothing to add
);

CREATE TABLE shipments (
  order_no      VARCHAR(16)  NOT NULL PRIMARY KEY REFERENCES orders (order_no),
  business_line VARCHAR(32)  NOT NULL,
  carrier       VARCHAR(64)  NOT NULL,               -- 'SF Express 顺丰'
  tracking_no   VARCHAR(32),                         -- NULL while pending
  status        VARCHAR(32)  NOT NULL,               -- pending | delivered | returned | in_transit | rejected
  note          TEXT                                 -- NULL when empty
);

CREATE TABLE refunds (
  refund_id     VARCHAR(16)    NOT NULL PRIMARY KEY, -- 'RF3001'
  order_no      VARCHAR(16)    NOT NULL REFERENCES orders (order_no),
  business_line VARCHAR(32)    NOT NULL,
  amount        NUMERIC(12, 2) NOT NULL,
  fee           NUMERIC(12, 2) NOT NULL,
  status        VARCHAR(32)    NOT NULL,             -- completed | pending
  reason        TEXT           NOT NULL
);

CREATE INDEX idx_customers_business_line ON customers (business_line);
CREATE INDEX idx_orders_customer_id      ON orders (customer_id);
CREATE INDEX idx_orders_business_line    ON orders (business_line);
CREATE INDEX idx_orders_placed_at        ON orders (placed_at);
CREATE INDEX idx_shipments_business_line ON shipments (business_line);
CREATE INDEX idx_refunds_order_no        ON refunds (order_no);
CREATE INDEX idx_refunds_business_line   ON refunds (business_line);
