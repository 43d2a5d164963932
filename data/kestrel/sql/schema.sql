-- Kestrel Medical (隼康医疗) records database: hospitals, orders, installations (device serials),
-- service contracts. The fourth sample company (data/kestrel/COMPANY.md), a second held-out set.
-- ONE portable file, following the rules of data/nimbus/sql/schema.sql (PostgreSQL 15, MariaDB
-- 10.11 and SQLite 3):
--  * keys VARCHAR(n), money NUMERIC(12,2);
--  * TIMESTAMPS ARE TEXT, ISO-8601 UTC with a literal Z, exactly 20 characters
--    ('2026-10-19T00:00:00Z'); calendar days (order, install, due, contract dates) are midnight UTC.
--  * ABSOLUTE dates, mostly August-October 2026; the rows are the state of 2026-10-20.
--  * Every table carries `region` (east | south | north): the sales/service region of the
--    hospital. The adapter binds the caller's regions as the permission predicate
--    (region IN (:user.regions)).
--
-- Re-running this file drops and re-creates the tables (children first).

DROP TABLE IF EXISTS service_contracts;
DROP TABLE IF EXISTS installations;
DROP TABLE IF EXISTS orders;
DROP TABLE IF EXISTS hospitals;

CREATE TABLE hospitals (
  hospital_id     VARCHAR(8)     NOT NULL PRIMARY KEY,   -- 'H-101'
  name            VARCHAR(120)   NOT NULL,               -- '上海东华医院 Shanghai Donghua Hospital'
  region          VARCHAR(8)     NOT NULL,               -- east | south | north
  city            VARCHAR(40)    NOT NULL,
  kind            VARCHAR(16)    NOT NULL,               -- public | private
  payment_terms   VARCHAR(16)    NOT NULL,               -- net90 (public) | net30 (private)
  account_manager VARCHAR(64)    NOT NULL,
  status          VARCHAR(16)    NOT NULL                -- active | credit_hold
);

CREATE TABLE orders (
  order_no      VARCHAR(12)    NOT NULL PRIMARY KEY,     -- 'KO-2026-0412'
  hospital_id   VARCHAR(8)     NOT NULL REFERENCES hospitals (hospital_id),
  region        VARCHAR(8)     NOT NULL,
  product       VARCHAR(16)    NOT NULL,                 -- KM-V300 | KM-P200 | KM-M500 | KM-D100 | KM-U700 | parts
  qty           INTEGER        NOT NULL,
  amount        NUMERIC(12, 2) NOT NULL,                 -- net of discount
  discount_pct  NUMERIC(5, 2)  NOT NULL,
  currency      VARCHAR(3)     NOT NULL,
  ordered_at    VARCHAR(20)    NOT NULL,
  status        VARCHAR(16)    NOT NULL,                 -- delivered | installing | backordered | on_hold | cancelled
  invoiced_at   VARCHAR(20),
  due_at        VARCHAR(20),
  paid_status   VARCHAR(16)    NOT NULL,                 -- not_invoiced | open | paid | overdue | disputed
  note          TEXT
);

CREATE TABLE installations (
  serial_no     VARCHAR(16)    NOT NULL PRIMARY KEY,     -- 'P200-2404117' (product-yymm + number)
  product       VARCHAR(16)    NOT NULL,
  hospital_id   VARCHAR(8)     NOT NULL REFERENCES hospitals (hospital_id),
  region        VARCHAR(8)     NOT NULL,
  department    VARCHAR(40)    NOT NULL,
  order_no      VARCHAR(12),
  installed_at  VARCHAR(20)    NOT NULL,
  firmware      VARCHAR(16)    NOT NULL,
  status        VARCHAR(16)    NOT NULL,                 -- in_service | under_repair | out_of_service | loaner
  fsn           VARCHAR(16),                             -- the field safety notice concerning the unit, or NULL
  fsn_status    VARCHAR(16)    NOT NULL,                 -- n/a | pending | done
  note          TEXT
);

CREATE TABLE service_contracts (
  contract_no   VARCHAR(12)    NOT NULL PRIMARY KEY,     -- 'SC-2026-011'
  hospital_id   VARCHAR(8)     NOT NULL REFERENCES hospitals (hospital_id),
  region        VARCHAR(8)     NOT NULL,
  tier          VARCHAR(8)     NOT NULL,                 -- gold | silver | basic
  starts_at     VARCHAR(20)    NOT NULL,
  ends_at       VARCHAR(20)    NOT NULL,
  annual_fee    NUMERIC(12, 2) NOT NULL,
  currency      VARCHAR(3)     NOT NULL,
  status        VARCHAR(16)    NOT NULL,                 -- active | pending_renewal | expired
  covers        VARCHAR(200)   NOT NULL,
  note          TEXT
);
