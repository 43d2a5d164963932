-- Orca Freight (鲸帆国际货运) freight database: customers, shipments (bookings), invoices, claims.
-- A second tuning company (data/orca/COMPANY.md). ONE portable file, following the rules of
-- data/nimbus/sql/schema.sql (PostgreSQL 15, MariaDB 10.11 and SQLite 3):
--  * keys VARCHAR(n), money NUMERIC(12,2) (read it as text: PG `::text`, MariaDB `CAST(.. AS CHAR)`,
--    SQLite `printf('%.2f', ..)`);
--  * TIMESTAMPS ARE TEXT, ISO-8601 UTC with a literal Z, exactly 20 characters
--    ('2026-07-13T00:00:00Z'); calendar days (ETD, ETA, due dates) are midnight UTC of that day.
--  * ABSOLUTE dates, May-July 2026; the rows are the state of 2026-07-20.
--  * Every table carries `branch` (szx | sha | hkg | ham): the booking branch. There is no ACL
--    table: the adapter binds the caller's branches as the permission predicate
--    (branch IN (:user.branches)).
--
-- Re-running this file drops and re-creates the tables (children first).

DROP TABLE IF EXISTS claims;
DROP TABLE IF EXISTS invoices;
DROP TABLE IF EXISTS shipments;
DROP TABLE IF EXISTS customers;

CREATE TABLE customers (
  customer_id     VARCHAR(8)     NOT NULL PRIMARY KEY,   -- 'CU-1003'
  name            VARCHAR(120)   NOT NULL,               -- '深圳迅达电子 Xunda Electronics'
  branch          VARCHAR(8)     NOT NULL,               -- szx | sha | hkg | ham
  country         VARCHAR(2)     NOT NULL,
  credit_terms    VARCHAR(16)    NOT NULL,               -- net30 | prepaid
  credit_limit    NUMERIC(12, 2) NOT NULL,
  currency        VARCHAR(3)     NOT NULL,
  account_manager VARCHAR(64)    NOT NULL,
  status          VARCHAR(16)    NOT NULL,               -- active | credit_hold
  created_at      VARCHAR(20)    NOT NULL
);

CREATE TABLE shipments (
  booking_no    VARCHAR(10)  NOT NULL PRIMARY KEY,     -- 'BK26-10452'
  customer_id   VARCHAR(8)   NOT NULL REFERENCES customers (customer_id),
  branch        VARCHAR(8)   NOT NULL,
  mode          VARCHAR(4)   NOT NULL,                 -- FCL | LCL | AIR
  equipment     VARCHAR(32)  NOT NULL,                 -- '1x40HQ', '6.2 CBM', '36 ctns'
  origin        VARCHAR(5)   NOT NULL,                 -- UN/LOCODE
  destination   VARCHAR(5)   NOT NULL,
  carrier       VARCHAR(32)  NOT NULL,
  vessel_voyage VARCHAR(48),
  container_no  VARCHAR(11),                           -- ISO 6346, first container of the booking
  etd           VARCHAR(20)  NOT NULL,
  eta           VARCHAR(20),
  status        VARCHAR(16)  NOT NULL,                 -- booked | departed | arrived | delivered | on_hold
  incoterm      VARCHAR(3)   NOT NULL,
  commodity     VARCHAR(80)  NOT NULL,
  gross_kg      INTEGER      NOT NULL,
  note          TEXT
);

CREATE TABLE invoices (
  invoice_no    VARCHAR(13)    NOT NULL PRIMARY KEY,   -- 'FI-2026-00902'
  booking_no    VARCHAR(10)    NOT NULL REFERENCES shipments (booking_no),
  customer_id   VARCHAR(8)     NOT NULL REFERENCES customers (customer_id),
  branch        VARCHAR(8)     NOT NULL,
  charge_type   VARCHAR(16)    NOT NULL,               -- freight | demurrage | detention | customs | storage | delivery
  issued_at     VARCHAR(20)    NOT NULL,
  due_at        VARCHAR(20)    NOT NULL,
  amount        NUMERIC(12, 2) NOT NULL,
  currency      VARCHAR(3)     NOT NULL,
  status        VARCHAR(16)    NOT NULL,               -- open | paid | overdue | disputed
  paid_at       VARCHAR(20),
  note          TEXT
);

CREATE TABLE claims (
  claim_no      VARCHAR(12)    NOT NULL PRIMARY KEY,   -- 'CLM-2026-014'
  booking_no    VARCHAR(10)    NOT NULL REFERENCES shipments (booking_no),
  customer_id   VARCHAR(8)     NOT NULL REFERENCES customers (customer_id),
  branch        VARCHAR(8)     NOT NULL,
  kind          VARCHAR(16)    NOT NULL,               -- damage | shortage | delay
  filed_at      VARCHAR(20)    NOT NULL,
  amount        NUMERIC(12, 2) NOT NULL,               -- amount claimed
  currency      VARCHAR(3)     NOT NULL,
  status        VARCHAR(16)    NOT NULL,               -- submitted | under_review | settled | rejected
  gross_kg      INTEGER        NOT NULL,
  limit_sdr     NUMERIC(12, 2),                        -- liability limit computed by claims, when known
  note          TEXT
);

CREATE INDEX idx_customers_branch  ON customers (branch);
CREATE INDEX idx_shipments_branch  ON shipments (branch);
CREATE INDEX idx_shipments_customer ON shipments (customer_id);
CREATE INDEX idx_shipments_container ON shipments (container_no);
CREATE INDEX idx_invoices_branch   ON invoices (branch);
CREATE INDEX idx_invoices_booking  ON invoices (booking_no);
CREATE INDEX idx_claims_branch     ON claims (branch);
