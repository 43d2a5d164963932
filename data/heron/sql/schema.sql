-- Heron Property (鹭栖物业) records database: estates, accounts (owners and tenants), invoices
-- (management fees, rent, parking, recharges) and commercial leases. The fifth sample company
-- (data/heron/COMPANY.md), a third held-out set. Portable like data/kestrel/sql/schema.sql:
--  * keys VARCHAR(n), money NUMERIC(12,2);
--  * TIMESTAMPS ARE TEXT, ISO-8601 UTC with a literal Z ('2026-11-10T00:00:00Z'); calendar days
--    (issue, due, lease dates) are midnight UTC.
--  * ABSOLUTE dates, mostly July-December 2026; the rows are the state of 2026-11-10.
--  * Every table carries `estate` (E01..E06). The adapter binds the caller's estates as the
--    permission predicate (estate IN (:user.estates)).
-- Re-running this file drops and re-creates the tables (children first).

DROP TABLE IF EXISTS leases;
DROP TABLE IF EXISTS invoices;
DROP TABLE IF EXISTS accounts;
DROP TABLE IF EXISTS estates;

CREATE TABLE estates (
  estate        VARCHAR(4)     NOT NULL PRIMARY KEY,     -- 'E01'
  name          VARCHAR(80)    NOT NULL,                 -- '鹭湾花园 Heron Bay Gardens'
  city          VARCHAR(40)    NOT NULL,
  kind          VARCHAR(16)    NOT NULL,                 -- residential | office | retail | logistics
  units         INTEGER        NOT NULL,
  manager       VARCHAR(64)    NOT NULL,
  fee_rate      NUMERIC(6, 2)  NOT NULL,                 -- management fee, yuan per m² per month
  note          TEXT
);

CREATE TABLE accounts (
  account_id    VARCHAR(8)     NOT NULL PRIMARY KEY,     -- 'HA-1002'
  estate        VARCHAR(4)     NOT NULL REFERENCES estates (estate),
  unit          VARCHAR(24)    NOT NULL,
  name          VARCHAR(120)   NOT NULL,                 -- '刘振华 Liu Zhenhua'
  kind          VARCHAR(16)    NOT NULL,                 -- owner | tenant | commercial
  area_m2       NUMERIC(8, 2)  NOT NULL,
  status        VARCHAR(16)    NOT NULL,                 -- active | arrears | moved_out
  since         VARCHAR(20)    NOT NULL,
  note          TEXT
);

CREATE TABLE invoices (
  invoice_no    VARCHAR(12)    NOT NULL PRIMARY KEY,     -- 'HI-2026-0715'
  account_id    VARCHAR(8)     NOT NULL REFERENCES accounts (account_id),
  estate        VARCHAR(4)     NOT NULL,
  kind          VARCHAR(16)    NOT NULL,                 -- mgmt_fee | rent | parking | recharge
  period        VARCHAR(7)     NOT NULL,                 -- '2026-10'
  amount        NUMERIC(12, 2) NOT NULL,
  issued_at     VARCHAR(20)    NOT NULL,
  due_at        VARCHAR(20)    NOT NULL,
  status        VARCHAR(16)    NOT NULL,                 -- open | paid | overdue | disputed
  note          TEXT
);

CREATE TABLE leases (
  lease_no      VARCHAR(12)    NOT NULL PRIMARY KEY,     -- 'L-2026-014'
  account_id    VARCHAR(8)     NOT NULL REFERENCES accounts (account_id),
  estate        VARCHAR(4)     NOT NULL,
  unit          VARCHAR(24)    NOT NULL,
  area_m2       NUMERIC(8, 2)  NOT NULL,
  starts_at     VARCHAR(20)    NOT NULL,
  ends_at       VARCHAR(20)    NOT NULL,
  monthly_rent  NUMERIC(12, 2) NOT NULL,
  rent_free_months INTEGER     NOT NULL,
  status        VARCHAR(20)    NOT NULL,                 -- active | pending_renewal | renewed | expired
  note          TEXT
);
