-- Wren Travel (鹪鹩旅行) bookings database: offices, customers (individuals and corporate accounts),
-- bookings, payments, refunds and visa applications. The sixth sample company
-- (data/wren/COMPANY.md), a held-out set, and the one eval company whose records live in
-- PostgreSQL (database `wren`, loaded by scripts/backends/postgres.sh). Written in the portable
-- style of data/sample/sql/schema.sql so it also loads into MariaDB or SQLite:
--  * keys VARCHAR(n), money NUMERIC(12,2) (read it as text: PG `amount::text`);
--  * TIMESTAMPS AND DAYS ARE TEXT, ISO-8601 UTC with a literal Z, exactly 20 characters
--    ('2026-11-17T00:00:00Z'); calendar days (departure, return, due dates) are midnight UTC of
--    that day, so string order is time order and range filters are plain comparisons.
--  * ABSOLUTE dates, mostly August-November 2026 (departures run into 2027); the rows are the
--    state of Tuesday 2026-11-17, 10:00 Asia/Shanghai.
--  * Every table carries `office` (HZ | CD | SG): the office that owns the customer or booking.
--    There is no ACL table: the adapter binds the caller's offices as the permission predicate
--    (office IN (:user.offices)).
-- Re-running this file drops and re-creates the tables (children first).

DROP TABLE IF EXISTS visa_applications;
DROP TABLE IF EXISTS refunds;
DROP TABLE IF EXISTS payments;
DROP TABLE IF EXISTS bookings;
DROP TABLE IF EXISTS customers;
DROP TABLE IF EXISTS offices;

CREATE TABLE offices (
  office        VARCHAR(4)     NOT NULL PRIMARY KEY,     -- 'HZ'
  name          VARCHAR(80)    NOT NULL,                 -- '杭州总部 Hangzhou HQ'
  city          VARCHAR(40)    NOT NULL,
  address       VARCHAR(200)   NOT NULL,
  phone         VARCHAR(32)    NOT NULL,
  manager       VARCHAR(64)    NOT NULL,
  currency      VARCHAR(3)     NOT NULL                  -- the office's selling currency
);

CREATE TABLE customers (
  customer_id   VARCHAR(8)     NOT NULL PRIMARY KEY,     -- 'WC-1001' individuals, 'WC-2001' corporate
  office        VARCHAR(4)     NOT NULL REFERENCES offices (office),
  name          VARCHAR(120)   NOT NULL,                 -- '王丽华 Wang Lihua', 'Lumex Semiconductor Pte. Ltd. 鲁美科半导体'
  kind          VARCHAR(16)    NOT NULL,                 -- individual | corporate
  contact       VARCHAR(120)   NOT NULL,                 -- phone or the corporate contact person
  since         VARCHAR(20)    NOT NULL,
  account_manager VARCHAR(64)  NOT NULL,
  note          TEXT
);

CREATE TABLE bookings (
  booking_no    VARCHAR(16)    NOT NULL PRIMARY KEY,     -- 'WB-2026-0412'
  customer_id   VARCHAR(8)     NOT NULL REFERENCES customers (customer_id),
  office        VARCHAR(4)     NOT NULL REFERENCES offices (office),
  tour_code     VARCHAR(16)    NOT NULL,                 -- 'JP-HKD-7D' (itineraries index), custom codes for corporate programmes
  product       VARCHAR(160)   NOT NULL,                 -- '北海道冬季七日游 Hokkaido winter 7 days'
  departure_date VARCHAR(20)   NOT NULL,
  return_date   VARCHAR(20)    NOT NULL,
  pax           INTEGER        NOT NULL,
  total_amount  NUMERIC(12, 2) NOT NULL,
  currency      VARCHAR(3)     NOT NULL,                 -- CNY | SGD
  status        VARCHAR(20)    NOT NULL,                 -- confirmed | pending_payment | cancelled | completed | waitlisted
  booked_at     VARCHAR(20)    NOT NULL,
  balance_due   VARCHAR(20),                             -- NULL when paid in full or not applicable
  agent         VARCHAR(64)    NOT NULL,                 -- the sales agent
  note          TEXT
);

CREATE TABLE payments (
  payment_id    VARCHAR(16)    NOT NULL PRIMARY KEY,     -- 'WP-2026-0901'
  booking_no    VARCHAR(16)    NOT NULL REFERENCES bookings (booking_no),
  office        VARCHAR(4)     NOT NULL REFERENCES offices (office),
  kind          VARCHAR(16)    NOT NULL,                 -- deposit | balance | full
  amount        NUMERIC(12, 2) NOT NULL,
  currency      VARCHAR(3)     NOT NULL,
  method        VARCHAR(20)    NOT NULL,                 -- alipay | wechat | bank_transfer | credit_card | paynow | cash
  status        VARCHAR(16)    NOT NULL,                 -- received | pending | partial
  due_at        VARCHAR(20),
  paid_at       VARCHAR(20),                             -- NULL while pending
  note          TEXT
);

CREATE TABLE refunds (
  refund_id     VARCHAR(16)    NOT NULL PRIMARY KEY,     -- 'WR-2026-0024'
  booking_no    VARCHAR(16)    NOT NULL REFERENCES bookings (booking_no),
  office        VARCHAR(4)     NOT NULL REFERENCES offices (office),
  reason        VARCHAR(32)    NOT NULL,                 -- customer_cancel | visa_rejection | flight_cancellation | compensation | unused_services | goodwill
  amount        NUMERIC(12, 2) NOT NULL,
  currency      VARCHAR(3)     NOT NULL,
  status        VARCHAR(20)    NOT NULL,                 -- pending_approval | approved | paid | rejected
  requested_at  VARCHAR(20)    NOT NULL,
  paid_at       VARCHAR(20),
  approved_by   VARCHAR(64),
  note          TEXT
);

CREATE TABLE visa_applications (
  visa_id       VARCHAR(16)    NOT NULL PRIMARY KEY,     -- 'WV-2026-0219'
  customer_id   VARCHAR(8)     NOT NULL REFERENCES customers (customer_id),
  booking_no    VARCHAR(16)    REFERENCES bookings (booking_no),
  office        VARCHAR(4)     NOT NULL REFERENCES offices (office),
  applicant     VARCHAR(120)   NOT NULL,                 -- the traveller(s) the application is for
  country       VARCHAR(40)    NOT NULL,                 -- 'Japan', 'Switzerland (Schengen)', ...
  visa_type     VARCHAR(40)    NOT NULL,
  status        VARCHAR(20)    NOT NULL,                 -- submitted | approved | rejected | need_more_docs
  submitted_at  VARCHAR(20)    NOT NULL,
  decided_at    VARCHAR(20),                             -- NULL while undecided
  specialist    VARCHAR(64)    NOT NULL,
  note          TEXT
);
