-- What each customer sent per currency and UTC day, kept as a running counter in the transaction
-- that moves the money (KYC daily limits read one row instead of summing the day's transfers).
-- Writers hold the customer's spending advisory lock from the read to the commit, so the limit is
-- exact under concurrency. A payout that fails or is returned gives its amount back.
create table customer_daily_spend (
  tenant_id uuid not null,
  environment text not null,
  customer_id uuid not null,
  currency text not null,
  day date not null,
  amount bigint not null check (amount >= 0),
  primary key (tenant_id, environment, customer_id, currency, day)
);

-- Backfill: only today and yesterday (UTC) matter to a daily limit; older days are never read.
insert into customer_daily_spend (tenant_id, environment, customer_id, currency, day, amount)
select tenant_id, environment, customer_id, currency, (created_at at time zone 'UTC')::date, sum(amount)
from transfers
where customer_id is not null
  and status not in ('failed', 'returned')
  and created_at >= (now() at time zone 'UTC')::date - 1
group by tenant_id, environment, customer_id, currency, (created_at at time zone 'UTC')::date;
