import { currencyExponent, formatAmount } from '../../lib/money.js';
import { BankFileError, buildBankXml, decodeText, type ParsedDocument } from './xml.js';

/**
 * The four ISO 20022 messages of the file exchange, as plain values: pain.001.001.09 built for
 * the bank, pain.002.001.10 / camt.054.001.08 / camt.053.001.08 read from it (and built too, by
 * the sandbox bank and the tests). Reading checks every field it uses and refuses the whole file
 * with the entry and field at fault.
 */
export const NS = {
  'pain.001': 'urn:iso:std:iso:20022:tech:xsd:pain.001.001.09',
  'pain.002': 'urn:iso:std:iso:20022:tech:xsd:pain.002.001.10',
  'camt.053': 'urn:iso:std:iso:20022:tech:xsd:camt.053.001.08',
  'camt.054': 'urn:iso:std:iso:20022:tech:xsd:camt.054.001.08',
} as const;
export type MessageKind = keyof typeof NS;

export interface AccountId {
  iban: string | null;
  accountNumber: string | null;
}

export const accountXml = (a: AccountId) => (a.iban ? { IBAN: a.iban } : { Othr: { Id: a.accountNumber } });
const agentXml = (bic: string | null, code: string | null) => ({
  FinInstnId: bic ? { BICFI: bic } : code ? { ClrSysMmbId: { MmbId: code } } : { Othr: { Id: 'NOTPROVIDED' } },
});

/** Minor units as the message's decimal amount (the currency's own exponent). */
export const amountText = (minor: bigint, currency: string) => formatAmount(minor, currency);
export const isoSeconds = (d: Date) => d.toISOString().replace(/\.\d{3}Z$/, 'Z');
export const isoDate = (d: Date) => d.toISOString().slice(0, 10);

export interface Pain001Payment {
  endToEndId: string;
  amount: bigint;
  currency: string;
  executionDate: string;
  creditorName: string;
  creditorAccount: AccountId;
  creditorBic: string | null;
  creditorBankCode: string | null;
  remittance: string | null;
}

export interface Pain001Input {
  messageId: string;
  createdAt: Date;
  initiatingParty: string;
  debtorName: string;
  debtorAccount: AccountId;
  debtorBic: string | null;
  debtorBankCode: string | null;
  payments: Pain001Payment[];
}

/** Sum of amounts as a decimal with the largest exponent among them (CtrlSum is currency-blind). */
function controlSum(items: { amount: bigint; currency: string }[]): string {
  const exp = Math.max(0, ...items.map((i) => currencyExponent(i.currency)));
  const total = items.reduce((sum, i) => sum + i.amount * 10n ** BigInt(exp - currencyExponent(i.currency)), 0n);
  if (exp === 0) return total.toString();
  const s = total.toString().padStart(exp + 1, '0');
  return `${s.slice(0, -exp)}.${s.slice(-exp)}`;
}

/** One PmtInf per execution date (the debtor account is the connection's), one CdtTrfTxInf per payout. */
export function buildPain001(input: Pain001Input): string {
  const byDate = new Map<string, Pain001Payment[]>();
  for (const p of input.payments) byDate.set(p.executionDate, [...(byDate.get(p.executionDate) ?? []), p]);
  const blocks = [...byDate.entries()].sort(([a], [b]) => a.localeCompare(b));
  return buildBankXml(NS['pain.001'], {
    CstmrCdtTrfInitn: {
      GrpHdr: {
        MsgId: input.messageId,
        CreDtTm: isoSeconds(input.createdAt),
        NbOfTxs: String(input.payments.length),
        CtrlSum: controlSum(input.payments),
        InitgPty: { Nm: input.initiatingParty },
      },
      PmtInf: blocks.map(([date, payments], i) => ({
        PmtInfId: `${input.messageId}-${i + 1}`.slice(0, 35),
        PmtMtd: 'TRF',
        NbOfTxs: String(payments.length),
        CtrlSum: controlSum(payments),
        ReqdExctnDt: { Dt: date },
        Dbtr: { Nm: input.debtorName },
        DbtrAcct: { Id: accountXml(input.debtorAccount) },
        DbtrAgt: agentXml(input.debtorBic, input.debtorBankCode),
        CdtTrfTxInf: payments.map((p) => ({
          PmtId: { EndToEndId: p.endToEndId },
          Amt: { InstdAmt: { '@_Ccy': p.currency, '#text': amountText(p.amount, p.currency) } },
          ...(p.creditorBic || p.creditorBankCode ? { CdtrAgt: agentXml(p.creditorBic, p.creditorBankCode) } : {}),
          Cdtr: { Nm: p.creditorName },
          CdtrAcct: { Id: accountXml(p.creditorAccount) },
          ...(p.remittance ? { RmtInf: { Ustrd: p.remittance } } : {}),
        })),
      })),
    },
  });
}

// ---------- reading ----------

type Node = Record<string, unknown>;
const isNode = (v: unknown): v is Node => typeof v === 'object' && v !== null && !Array.isArray(v);

function child(node: unknown, path: string): unknown {
  let cur: unknown = node;
  for (const key of path.split('/')) {
    if (Array.isArray(cur)) cur = cur[0];
    if (!isNode(cur)) return undefined;
    cur = cur[key];
  }
  return cur;
}

function text(node: unknown, path: string): string | undefined {
  const v = child(node, path);
  const raw = isNode(v) ? v['#text'] : Array.isArray(v) ? v[0] : v;
  return typeof raw === 'string' ? decodeText(raw).trim() : undefined;
}

function required(node: unknown, path: string, where: string): string {
  const v = text(node, path);
  if (!v) throw new BankFileError(`${path} is missing`, where);
  return v;
}

const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : v === undefined ? [] : [v]);

/** A decimal amount in its currency's minor units, refused when it has more decimals than the currency. */
export function parseMinor(value: string, currency: string, where: string): bigint {
  const exp = currencyExponent(currency);
  const m = /^(\d{1,18})(?:\.(\d{1,5}))?$/.exec(value);
  if (!m) throw new BankFileError(`Amount "${value}" is not a decimal amount`, where);
  const fraction = (m[2] ?? '').replace(/0+$/, '');
  if (fraction.length > exp) throw new BankFileError(`Amount ${value} has more decimals than ${currency} allows`, where);
  return BigInt(m[1]!) * 10n ** BigInt(exp) + BigInt(fraction.padEnd(exp, '0') || '0');
}

function amountOf(node: unknown, path: string, where: string): { amount: bigint; currency: string } {
  const amt = child(node, path);
  const currency = isNode(amt) ? amt['@_Ccy'] : undefined;
  if (typeof currency !== 'string' || !/^[A-Z]{3}$/.test(currency)) throw new BankFileError(`${path} has no currency (Ccy)`, where);
  return { amount: parseMinor(required(node, path, where), currency, where), currency };
}

function accountOf(node: unknown, path: string): AccountId | undefined {
  const iban = text(node, `${path}/Id/IBAN`);
  const other = text(node, `${path}/Id/Othr/Id`);
  return iban || other ? { iban: iban?.replace(/\s/g, '') ?? null, accountNumber: other ?? null } : undefined;
}

/** The message a parsed document is, by its namespace and root, or a refusal. */
export function kindOf(doc: ParsedDocument): MessageKind {
  const roots: Record<MessageKind, string> = {
    'pain.001': 'CstmrCdtTrfInitn',
    'pain.002': 'CstmrPmtStsRpt',
    'camt.053': 'BkToCstmrStmt',
    'camt.054': 'BkToCstmrDbtCdtNtfctn',
  };
  const kind = (Object.keys(NS) as MessageKind[]).find((k) => NS[k] === doc.namespace);
  if (!kind) {
    throw new BankFileError(
      `The namespace "${doc.namespace}" is not one this import reads (${Object.values(NS)
        .filter((n) => !n.includes('pain.001'))
        .join(', ')})`,
      'Document',
    );
  }
  if (!isNode(doc.root[roots[kind]])) throw new BankFileError(`A ${kind} document must have ${roots[kind]}`, 'Document');
  return kind;
}

export interface StatusReport {
  messageId: string;
  originalMessageId: string;
  groupStatus: string | null;
  groupReason: string | null;
  transactions: { endToEndId: string; status: string; reason: string | null; where: string }[];
}

function reasonOf(node: unknown): string | null {
  const info = list(child(node, 'StsRsnInf'))[0];
  if (!info) return null;
  const code = text(info, 'Rsn/Cd') ?? text(info, 'Rsn/Prtry');
  const extra = list(child(info, 'AddtlInf'))
    .map((v) => (typeof v === 'string' ? decodeText(v) : ''))
    .join(' ')
    .trim();
  return [code, extra].filter(Boolean).join(': ') || null;
}

const TX_STATUSES = new Set([
  'ACTC',
  'ACCP',
  'ACSP',
  'ACSC',
  'ACCC',
  'ACWC',
  'ACWP',
  'ACFC',
  'ACIS',
  'PDNG',
  'RCVD',
  'RJCT',
  'PART',
  'CANC',
  'PATC',
  'BLCK',
]);

export function readPain002(doc: ParsedDocument): StatusReport {
  const root = doc.root.CstmrPmtStsRpt as Node;
  const messageId = required(root, 'GrpHdr/MsgId', 'GrpHdr');
  const group = child(root, 'OrgnlGrpInfAndSts');
  const originalMessageId = required(group, 'OrgnlMsgId', 'OrgnlGrpInfAndSts');
  const groupStatus = text(group, 'GrpSts') ?? null;
  if (groupStatus && !TX_STATUSES.has(groupStatus))
    throw new BankFileError(`GrpSts ${groupStatus} is not a payment status code`, 'OrgnlGrpInfAndSts');
  const transactions: StatusReport['transactions'] = [];
  list(root.OrgnlPmtInfAndSts).forEach((block, b) => {
    list(child(block, 'TxInfAndSts')).forEach((tx, t) => {
      const where = `OrgnlPmtInfAndSts[${b + 1}]/TxInfAndSts[${t + 1}]`;
      const status = required(tx, 'TxSts', where);
      if (!TX_STATUSES.has(status)) throw new BankFileError(`TxSts ${status} is not a payment status code`, where);
      transactions.push({ endToEndId: required(tx, 'OrgnlEndToEndId', where), status, reason: reasonOf(tx), where });
    });
  });
  return { messageId, originalMessageId, groupStatus, groupReason: reasonOf(group), transactions };
}

export interface CashItem {
  /** The bank's reference of the entry (NtryRef, else AcctSvcrRef), with the detail's index when an entry has several. */
  key: string;
  where: string;
  direction: 'credit' | 'debit';
  amount: bigint;
  currency: string;
  reversal: boolean;
  status: string;
  bookingDate: string | null;
  endToEndId: string | null;
  payerName: string | null;
  creditorAccount: AccountId | null;
  reference: string | null;
  returnReason: string | null;
}

export interface CashReport {
  kind: 'camt.053' | 'camt.054';
  messageId: string;
  reports: {
    id: string;
    where: string;
    account: AccountId;
    currency: string | null;
    closing: { amount: bigint; currency: string; date: string } | null;
    items: CashItem[];
  }[];
}

function dateOf(node: unknown, path: string): string | null {
  const v = text(node, `${path}/Dt`) ?? text(node, `${path}/DtTm`)?.slice(0, 10);
  return v && /^\d{4}-\d{2}-\d{2}$/.test(v) ? v : null;
}

function itemsOf(entry: unknown, where: string): CashItem[] {
  const ref = text(entry, 'NtryRef') ?? text(entry, 'AcctSvcrRef');
  if (!ref) throw new BankFileError('The entry has neither NtryRef nor AcctSvcrRef: it could not be imported only once', where);
  const { amount, currency } = amountOf(entry, 'Amt', where);
  const indicator = required(entry, 'CdtDbtInd', where);
  if (indicator !== 'CRDT' && indicator !== 'DBIT') throw new BankFileError(`CdtDbtInd ${indicator} is neither CRDT nor DBIT`, where);
  const base = {
    direction: indicator === 'CRDT' ? ('credit' as const) : ('debit' as const),
    reversal: text(entry, 'RvslInd') === 'true',
    status: text(entry, 'Sts/Cd') ?? text(entry, 'Sts/Prtry') ?? required(entry, 'Sts', where),
    bookingDate: dateOf(entry, 'BookgDt'),
  };
  const details = list(child(entry, 'NtryDtls')).flatMap((d) => list(child(d, 'TxDtls')));
  const describe = (tx: unknown): Pick<CashItem, 'endToEndId' | 'payerName' | 'creditorAccount' | 'reference' | 'returnReason'> => ({
    endToEndId: text(tx, 'Refs/EndToEndId') ?? null,
    payerName: text(tx, 'RltdPties/Dbtr/Pty/Nm') ?? text(tx, 'RltdPties/Dbtr/Nm') ?? null,
    creditorAccount: accountOf(tx, 'RltdPties/CdtrAcct') ?? null,
    reference: text(tx, 'RmtInf/Ustrd') ?? text(tx, 'RmtInf/Strd/CdtrRefInf/Ref') ?? null,
    returnReason: text(tx, 'RtrInf/Rsn/Cd') ?? text(tx, 'RtrInf/Rsn/Prtry') ?? null,
  });
  if (details.length <= 1) return [{ key: ref, where, amount, currency, ...base, ...describe(details[0]) }];
  // A batch entry: each transaction detail is booked on its own, with its own amount.
  const items = details.map((tx, i) => {
    const at = `${where}/TxDtls[${i + 1}]`;
    const own = amountOf(tx, 'Amt', at);
    if (own.currency !== currency)
      throw new BankFileError(`The detail's currency ${own.currency} differs from its entry's ${currency}`, at);
    return { key: `${ref}/${i + 1}`, where: at, ...own, ...base, ...describe(tx) };
  });
  const sum = items.reduce((s, i) => s + i.amount, 0n);
  if (sum !== amount)
    throw new BankFileError(
      `The details add up to ${formatAmount(sum, currency)}, not the entry's ${formatAmount(amount, currency)}`,
      where,
    );
  return items;
}

export function readCash(doc: ParsedDocument, kind: 'camt.053' | 'camt.054'): CashReport {
  const root = doc.root[kind === 'camt.053' ? 'BkToCstmrStmt' : 'BkToCstmrDbtCdtNtfctn'] as Node;
  const messageId = required(root, 'GrpHdr/MsgId', 'GrpHdr');
  const tag = kind === 'camt.053' ? 'Stmt' : 'Ntfctn';
  const blocks = list(root[tag]);
  if (blocks.length === 0) throw new BankFileError(`The file has no ${tag}`, tag);
  return {
    kind,
    messageId,
    reports: blocks.map((block, b) => {
      const where = `${tag}[${b + 1}]`;
      const account = accountOf(block, 'Acct');
      if (!account) throw new BankFileError('Acct/Id is missing', where);
      let closing: CashReport['reports'][number]['closing'] = null;
      for (const [i, bal] of list(child(block, 'Bal')).entries()) {
        if ((text(bal, 'Tp/CdOrPrtry/Cd') ?? '') !== 'CLBD') continue;
        const at = `${where}/Bal[${i + 1}]`;
        const { amount, currency } = amountOf(bal, 'Amt', at);
        const date = dateOf(bal, 'Dt');
        if (!date) throw new BankFileError('The closing balance has no date', at);
        closing = { amount: required(bal, 'CdtDbtInd', at) === 'DBIT' ? -amount : amount, currency, date };
      }
      if (kind === 'camt.053' && !closing) throw new BankFileError('The statement has no closing booked balance (CLBD)', where);
      return {
        id: required(block, 'Id', where),
        where,
        account,
        currency: text(block, 'Acct/Ccy') ?? null,
        closing,
        items: list(child(block, 'Ntry')).flatMap((entry, e) => itemsOf(entry, `${where}/Ntry[${e + 1}]`)),
      };
    }),
  };
}
