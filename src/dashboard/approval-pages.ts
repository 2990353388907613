import type { Page } from '../db/pagination.js';
import { formatAmount } from '../lib/money.js';
import type { ApprovalPolicy, ApprovalRow } from '../modules/approvals/service.js';
import { emptyState } from './empty-states.js';
import { html, type Html } from './html.js';
import { appPage, badge, csrfField, filterForm, idCell, idLink, pager, table, when } from './layout.js';
import { can } from './roles.js';
import type { Session } from './service.js';

export const APPROVAL_STATUSES = ['waiting_approval', 'approved', 'rejected', 'expired'] as const;
export const APPROVAL_KINDS = ['fx_order', 'payout', 'payee'] as const;
const KIND_LABEL: Record<ApprovalRow['kind'], string> = { fx_order: 'FX order', payout: 'Payout', payee: 'New payee' };

function subject(row: ApprovalRow): Html | null {
  return row.kind === 'payout' ? idLink('transfer', row.subject_id) : idCell(row.subject_id);
}

function actions(session: Session, row: ApprovalRow): Html | null {
  if (row.status !== 'waiting_approval' || !can(session.role, 'approvals')) return null;
  if (row.created_by_user_id === session.userId) return html`<small>You made this request; another approver must decide.</small>`;
  const label = `${KIND_LABEL[row.kind]} ${row.subject_id}`;
  return html`<form method="post" action="/dashboard/approvals/${row.id}/approve" class="inline">${csrfField(session)}
    <button type="submit" class="primary" aria-label="Approve ${label}">Approve</button></form>
  <form method="post" action="/dashboard/approvals/${row.id}/reject" class="inline" data-confirm="Reject this request? Any held funds are released.">${csrfField(session)}
    <input name="reason" maxlength="200" size="14" placeholder="Reason (optional)" aria-label="Reason for rejecting ${label}">
    <button type="submit" class="danger" aria-label="Reject ${label}">Reject</button></form>`;
}

function thresholds(policy: ApprovalPolicy): string {
  return [...policy.payoutsAbove].map(([ccy, minor]) => `${ccy} ${formatAmount(minor, ccy)}`).join(', ');
}

function settingsCard(session: Session, policy: ApprovalPolicy | null): Html {
  if (!can(session.role, 'approvals')) return html``;
  if (!policy)
    return html`<section class="card"><h2>Settings</h2><p>The approvals setting of this business is not valid; ask the operator to fix it.</p></section>`;
  const checked = (on: boolean) => (on ? html` checked` : '');
  return html`<section class="card" id="approval-settings"><h2>When approval is needed (${session.environment})</h2>
<form method="post" action="/dashboard/approvals/settings">${csrfField(session)}
  <fieldset>
  <legend>Wait for approval</legend>
  <div class="checks"><div><input id="ap-fx" name="fx_orders" type="checkbox" value="on"${checked(policy.fxOrders)}> <label for="ap-fx">FX orders</label></div>
  <div><input id="ap-payees" name="new_payees" type="checkbox" value="on"${checked(policy.newPayees)}> <label for="ap-payees">New payees (external accounts)</label></div></div>
  </fieldset>
  <div class="field"><label for="ap-payouts">Payouts above (per currency, e.g. <code>USD 1000.00, NGN 0</code>; empty: never)</label>
    <input id="ap-payouts" name="payouts_above" value="${thresholds(policy)}" maxlength="400"></div>
  <div class="field"><label for="ap-hours">A request expires after (hours)</label>
    <input id="ap-hours" name="expire_after_hours" type="number" min="1" max="2160" value="${policy.expireAfterHours}"></div>
  <button type="submit">Save</button>
</form>
<p>Requests are made with the API; owners and admins approve or reject them here. Nothing moves before approval; a rejected or expired request releases any held funds.</p>
</section>`;
}

export function approvalsPage(
  session: Session,
  filters: Record<string, string | undefined>,
  page: Page<ApprovalRow>,
  policy: ApprovalPolicy | null,
  notice?: Html,
): Html {
  const list = table(
    'Approval requests',
    [
      { label: 'Request', cell: (r: ApprovalRow) => html`${r.summary}<br>${subject(r)}` },
      {
        label: 'Amount',
        numeric: true,
        cell: (r) => (r.amount !== null && r.currency ? `${formatAmount(r.amount, r.currency)} ${r.currency}` : null),
      },
      {
        label: 'Requested',
        cell: (r) => html`${when(r.created_at.toISOString())}<br><small>by ${r.created_by_user_id ? r.created_by_role : 'API key'}</small>`,
      },
      {
        label: 'Status',
        cell: (r) =>
          html`${badge(r.status)}<br><small>${
            r.status === 'waiting_approval'
              ? html`expires ${when(r.expires_at.toISOString())}`
              : html`${r.decided_by_email ?? ''} ${when(r.decided_at?.toISOString() ?? null)}${r.reason ? html`: ${r.reason}` : ''}`
          }</small>`,
      },
      { label: 'Actions', cell: (r) => actions(session, r) },
    ],
    page.items,
    filters.status === 'waiting_approval' && !filters.kind ? emptyState('approvals', '') : 'No requests match.',
  );
  return appPage(
    session,
    'approvals',
    'Approvals',
    html`${filterForm(
      '/dashboard/approvals',
      [
        { name: 'status', label: 'Status', type: 'select', options: APPROVAL_STATUSES },
        { name: 'kind', label: 'Kind', type: 'select', options: APPROVAL_KINDS },
      ],
      filters,
    )}
<section class="card">${list}${pager('/dashboard/approvals', { status: filters.status, kind: filters.kind }, page as Page<unknown>)}</section>
${settingsCard(session, policy)}`,
    notice,
  );
}
