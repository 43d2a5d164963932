-- Nimbus Cloud (云雀科技) sample billing schema: customers, subscriptions, invoices, credit_notes.
-- The held-out evaluation company (data/nimbus/COMPANY.md). ONE portable file, following the rules
-- of data/sample/sql/schema.sql (PostgreSQL 15, MariaDB 10.11 and SQLite 3):
--  * keys VARCHAR(n), money NUMERIC(12,2) (read it as text: PG `::text`, MariaDB `CAST(.. AS CHAR)`,
--    SQLite `printf('%.2f', ..)`);
--  * TIMESTAMPS ARE TEXT, ISO-8601 UTC with a literal Z, exactly 20 characters
--    ('2026-10-15T00:00:00Z'), so string order == time order. Dates that are calendar days
--    (due dates, renewal dates) are stored as midnight UTC of that day, which is the same calendar
--    day in Asia/Shanghai and Europe/Berlin.
--  * ABSOLUTE dates (no load-time placeholders): this data set is pinned to 2026.
--  * Every table carries `region` (apac | emea). There is no ACL table: the adapter binds the
--    caller's regions as the permission predicate (region IN (:user.regions)).
--
-- Re-running this file drops and re-creates the tables (children first).

DROP TABLE IF EXISTS credit_notes;
DROP TABLE IF EXISTS invoices;
DROP TABLE IF EXISTS subscriptions;
DROP TABLE IF EXISTS customers;

CREATE TABLE customers (
  org_id        VARCHAR(16)  NOT NULL PRIMARY KEY,   -- 'ORG-301'
  name          VARCHAR(120) NOT NULL,               -- '杭州青禾物流 Qinghe Logistics'
  region        VARCHAR(16)  NOT NULL,               -- 'apac' | 'emea'
  country       VARCHAR(2)   NOT NULL,               -- ISO 3166 alpha-2
  data_region   VARCHAR(32)  NOT NULL,               -- 'cn-shanghai' | 'ap-singapore' | 'eu-frankfurt'
  account_owner VARCHAR(64)  NOT NULL,               -- customer success manager
  created_at    VARCHAR(20)  NOT NULL
);

CREATE TABLE subscriptions (
  sub_id        VARCHAR(16)    NOT NULL PRIMARY KEY, -- 'SUB-7001' (one per org)
  org_id        VARCHAR(16)    NOT NULL REFERENCES customers (org_id),
  region        VARCHAR(16)    NOT NULL,
  plan          VARCHAR(32)    NOT NULL,             -- starter | team | business | enterprise
  seats         INTEGER        NOT NULL,
  billing_cycle VARCHAR(16)    NOT NULL,             -- monthly | annual
  price         NUMERIC(12, 2) NOT NULL,             -- per billing cycle
  currency      VARCHAR(3)     NOT NULL,
  status        VARCHAR(16)    NOT NULL,             -- active | trial | cancelled
  started_at    VARCHAR(20)    NOT NULL,
  renews_at     VARCHAR(20),                         -- next renewal (or trial end); NULL when cancelled
  ends_at       VARCHAR(20),                         -- when a cancelled subscription ended
  note          TEXT
);

CREATE TABLE invoices (
  invoice_no    VARCHAR(16)    NOT NULL PRIMARY KEY, -- 'INV-2026-0042'
  org_id        VARCHAR(16)    NOT NULL REFERENCES customers (org_id),
  region        VARCHAR(16)    NOT NULL,
  period        VARCHAR(32)    NOT NULL,             -- '2026-09' (month billed) or '2026-11..2027-10'
  issued_at     VARCHAR(20)    NOT NULL,
  due_at        VARCHAR(20)    NOT NULL,
  amount        NUMERIC(12, 2) NOT NULL,
  currency      VARCHAR(3)     NOT NULL,
  status        VARCHAR(16)    NOT NULL,             -- open | paid | overdue | void
  paid_at       VARCHAR(20),
  dunning_stage INTEGER        NOT NULL,             -- 0 none, 1 first reminder, 2 second reminder + CSM, 3 read-only
  note          TEXT
);

CREATE TABLE credit_notes (
  credit_no     VARCHAR(16)    NOT NULL PRIMARY KEY, -- 'CN-2026-0007'
  invoice_no    VARCHAR(16)    NOT NULL REFERENCES invoices (invoice_no),
  org_id        VARCHAR(16)    NOT NULL REFERENCES customers (org_id),
  region        VARCHAR(16)    NOT NULL,
  amount        NUMERIC(12, 2) NOT NULL,
  currency      VARCHAR(3)     NOT NULL,
  kind          VARCHAR(16)    NOT NULL,             -- sla_credit | refund
  status        VARCHAR(16)    NOT NULL,             -- draft | approved | applied | refunded
  created_at    VARCHAR(20)    NOT NULL,
  reason        TEXT           NOT NULL
);

CREATE INDEX idx_customers_region     ON customers (region);
CREATE INDEX idx_subscriptions_org    ON subscriptions (org_id);
CREATE INDEX idx_subscriptions_region ON subscriptions (region);
CREATE INDEX idx_invoices_org         ON invoices (org_id);
CREATE INDEX idx_invoices_region      ON invoices (region);
CREATE INDEX idx_invoices_due_at      ON invoices (due_at);
CREATE INDEX idx_credit_notes_invoice ON credit_notes (invoice_no);
CREATE INDEX idx_credit_notes_region  ON credit_notes (region);
