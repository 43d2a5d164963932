-- Nimbus Cloud (云雀科技) sample rows, exactly as data/nimbus/COMPANY.md lists them.
-- Portable INSERTs for PostgreSQL, MariaDB and SQLite; absolute UTC times (see schema.sql).

INSERT INTO customers (org_id, name, region, country, data_region, account_owner, created_at) VALUES
  ('ORG-301', '杭州青禾物流 Qinghe Logistics',   'apac', 'CN', 'cn-shanghai',  'Mei Lin 林梅',  '2024-03-12T02:00:00Z'),
  ('ORG-302', 'Lumen Retail GmbH',               'emea', 'DE', 'eu-frankfurt', 'Jonas Weber',   '2023-11-02T09:00:00Z'),
  ('ORG-303', '上海星图教育 Xingtu Education',   'apac', 'CN', 'cn-shanghai',  'Mei Lin 林梅',  '2026-10-31T03:00:00Z'),
  ('ORG-304', 'Fjord Analytics AS',              'emea', 'NO', 'eu-frankfurt', 'Jonas Weber',   '2025-02-20T10:00:00Z'),
  ('ORG-305', 'Sakura Foods 株式会社',           'apac', 'JP', 'ap-singapore', 'Kenji Sato',    '2024-11-28T01:00:00Z'),
  ('ORG-306', '深圳云帆制造 Yunfan Manufacturing', 'apac', 'CN', 'cn-shanghai',  'Mei Lin 林梅',  '2025-12-15T06:00:00Z'),
  ('ORG-307', 'Brightwave Media Ltd',            'emea', 'GB', 'eu-frankfurt', 'Jonas Weber',   '2026-11-05T12:00:00Z'),
  ('ORG-308', 'Merlion Health Pte. Ltd.',        'apac', 'SG', 'ap-singapore', 'Kenji Sato',    '2025-03-01T02:00:00Z');

INSERT INTO subscriptions (sub_id, org_id, region, plan, seats, billing_cycle, price, currency, status, started_at, renews_at, ends_at, note) VALUES
  ('SUB-7001', 'ORG-301', 'apac', 'business',   120, 'monthly', 86400.00,  'CNY', 'active',    '2024-03-15T00:00:00Z', '2026-12-15T00:00:00Z', NULL, 'monthly renewal on the 15th'),
  ('SUB-7002', 'ORG-302', 'emea', 'enterprise', 400, 'monthly', 18200.00,  'EUR', 'active',    '2023-11-10T00:00:00Z', '2026-12-10T00:00:00Z', NULL, 'contract term ends 2027-01-15; renewal negotiation open'),
  ('SUB-7003', 'ORG-303', 'apac', 'team',        45, 'monthly', 0.00,      'CNY', 'trial',     '2026-10-31T00:00:00Z', '2026-11-30T00:00:00Z', NULL, '30-day trial; conversion depends on Chinese search (NIM-1230)'),
  ('SUB-7004', 'ORG-304', 'emea', 'business',    80, 'annual',  28800.00,  'EUR', 'cancelled', '2025-03-01T00:00:00Z', NULL, '2026-10-31T00:00:00Z', 'cancelled 2026-09-20, effective end of October; pro-rata refund CN-2026-0009'),
  ('SUB-7005', 'ORG-305', 'apac', 'enterprise', 250, 'annual',  31250.00,  'USD', 'active',    '2024-11-28T00:00:00Z', '2026-11-28T00:00:00Z', NULL, 'annual renewal, invoice INV-2026-0058 already paid'),
  ('SUB-7006', 'ORG-306', 'apac', 'starter',     12, 'monthly', 3600.00,   'CNY', 'active',    '2025-12-15T00:00:00Z', '2026-12-15T00:00:00Z', NULL, NULL),
  ('SUB-7007', 'ORG-307', 'emea', 'team',        30, 'monthly', 0.00,      'GBP', 'trial',     '2026-11-05T00:00:00Z', '2026-12-05T00:00:00Z', NULL, '30-day trial'),
  ('SUB-7008', 'ORG-308', 'apac', 'business',    60, 'annual',  14400.00,  'SGD', 'active',    '2025-03-01T00:00:00Z', '2027-03-01T00:00:00Z', NULL, 'renewed early for 2027 in November');

INSERT INTO invoices (invoice_no, org_id, region, period, issued_at, due_at, amount, currency, status, paid_at, dunning_stage, note) VALUES
  ('INV-2026-0012', 'ORG-304', 'emea', '2026-03..2027-02', '2026-02-01T00:00:00Z', '2026-03-03T00:00:00Z', 28800.00, 'EUR', 'paid',    '2026-02-25T00:00:00Z', 0, 'annual prepayment; pro-rata refund CN-2026-0009 after the cancellation'),
  ('INV-2026-0039', 'ORG-304', 'emea', '2026-09..2027-02', '2026-09-01T00:00:00Z', '2026-10-01T00:00:00Z', 3200.00,  'EUR', 'void',    NULL,                   0, 'seat true-up (+16 seats) voided after the cancellation on 2026-09-20'),
  ('INV-2026-0042', 'ORG-301', 'apac', '2026-09',          '2026-09-15T00:00:00Z', '2026-10-15T00:00:00Z', 86400.00, 'CNY', 'overdue', NULL,                   2, 'customer withholds payment: disputes the September invoice over webhook delays (NIM-1201, Incident 12) and the wrong tax id on the PDF (NIM-1219); SLA credit CN-2026-0007 pending approval'),
  ('INV-2026-0045', 'ORG-301', 'apac', '2026-10',          '2026-10-15T00:00:00Z', '2026-11-14T00:00:00Z', 86400.00, 'CNY', 'paid',    '2026-11-10T00:00:00Z', 0, NULL),
  ('INV-2026-0051', 'ORG-302', 'emea', '2026-10',          '2026-09-11T00:00:00Z', '2026-10-11T00:00:00Z', 18200.00, 'EUR', 'paid',    '2026-10-08T00:00:00Z', 0, NULL),
  ('INV-2026-0058', 'ORG-305', 'apac', '2026-11..2027-10', '2026-10-20T00:00:00Z', '2026-11-19T00:00:00Z', 31250.00, 'USD', 'paid',    '2026-11-05T00:00:00Z', 0, 'annual renewal 2026-11-28'),
  ('INV-2026-0063', 'ORG-302', 'emea', '2026-11',          '2026-10-11T00:00:00Z', '2026-11-10T00:00:00Z', 18200.00, 'EUR', 'overdue', NULL,                   1, 'customer asked for an SLA credit for the SSO outage (Incident 14) before paying; CN-2026-0011 drafted'),
  ('INV-2026-0066', 'ORG-308', 'apac', '2027-03..2028-02', '2026-11-01T00:00:00Z', '2026-12-01T00:00:00Z', 14400.00, 'SGD', 'paid',    '2026-11-12T00:00:00Z', 0, 'early renewal for 2027'),
  ('INV-2026-0071', 'ORG-306', 'apac', '2026-11',          '2026-10-19T00:00:00Z', '2026-11-18T00:00:00Z', 3600.00,  'CNY', 'overdue', NULL,                   0, 'first reminder goes out on day 7 (2026-11-25)'),
  ('INV-2026-0074', 'ORG-301', 'apac', '2026-11',          '2026-11-15T00:00:00Z', '2026-12-15T00:00:00Z', 86400.00, 'CNY', 'open',    NULL,                   0, NULL);

INSERT INTO credit_notes (credit_no, invoice_no, org_id, region, amount, currency, kind, status, created_at, reason) VALUES
  ('CN-2026-0007', 'INV-2026-0042', 'ORG-301', 'apac', 8640.00, 'CNY', 'sla_credit', 'draft',    '2026-10-20T00:00:00Z', 'SLA credit 10% of the September fee: apac uptime 99.72% < 99.9% during Incident 12 (SP-2026-031); above the approval threshold, waits for the finance lead'),
  ('CN-2026-0009', 'INV-2026-0012', 'ORG-304', 'emea', 9600.00, 'EUR', 'refund',     'refunded', '2026-11-03T00:00:00Z', 'pro-rata refund of the annual prepayment (INV-2026-0012) for the 4 unused months November 2026 - February 2027, after the cancellation effective 2026-10-31'),
  ('CN-2026-0011', 'INV-2026-0063', 'ORG-302', 'emea', 1820.00, 'EUR', 'sla_credit', 'draft',    '2026-11-12T00:00:00Z', 'SLA credit requested for the SSO outage of 2026-11-06 (Incident 14); emea uptime for November still to be confirmed');
