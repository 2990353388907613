import { accountXml, amountText, isoDate, isoSeconds, NS, type AccountId } from './messages.js';
import { buildBankXml } from './xml.js';

/** The messages the bank sends (pain.002, camt.054, camt.053), built: the sandbox bank's answers, and tests. */

export interface Pain002Input {
  messageId: string;
  createdAt: Date;
  originalMessageId: string;
  groupStatus?: string;
  groupReason?: string;
  transactions: { endToEndId: string; status: string; reason?: string }[];
}

const reasonXml = (code?: string) => (code ? { StsRsnInf: { Rsn: { Cd: code } } } : {});

export function buildPain002(input: Pain002Input): string {
  return buildBankXml(NS['pain.002'], {
    CstmrPmtStsRpt: {
      GrpHdr: { MsgId: input.messageId, CreDtTm: isoSeconds(input.createdAt) },
      OrgnlGrpInfAndSts: {
        OrgnlMsgId: input.originalMessageId,
        OrgnlMsgNmId: 'pain.001.001.09',
        ...(input.groupStatus ? { GrpSts: input.groupStatus } : {}),
        ...reasonXml(input.groupReason),
      },
      ...(input.transactions.length
        ? {
            OrgnlPmtInfAndSts: {
              OrgnlPmtInfId: `${input.originalMessageId}-1`.slice(0, 35),
              TxInfAndSts: input.transactions.map((t) => ({ OrgnlEndToEndId: t.endToEndId, TxSts: t.status, ...reasonXml(t.reason) })),
            },
          }
        : {}),
    },
  });
}

export interface CashEntryInput {
  ref: string;
  amount: bigint;
  currency: string;
  direction: 'credit' | 'debit';
  bookingDate: string;
  endToEndId?: string;
  payerName?: string;
  creditorAccount?: AccountId;
  reference?: string;
  returnReason?: string;
}

function entryXml(e: CashEntryInput) {
  const tx = {
    ...(e.endToEndId ? { Refs: { EndToEndId: e.endToEndId } } : {}),
    ...(e.payerName || e.creditorAccount
      ? {
          RltdPties: {
            ...(e.payerName ? { Dbtr: { Pty: { Nm: e.payerName } } } : {}),
            ...(e.creditorAccount ? { CdtrAcct: { Id: accountXml(e.creditorAccount) } } : {}),
          },
        }
      : {}),
    ...(e.reference ? { RmtInf: { Ustrd: e.reference } } : {}),
    ...(e.returnReason ? { RtrInf: { Rsn: { Cd: e.returnReason } } } : {}),
  };
  return {
    NtryRef: e.ref,
    Amt: { '@_Ccy': e.currency, '#text': amountText(e.amount, e.currency) },
    CdtDbtInd: e.direction === 'credit' ? 'CRDT' : 'DBIT',
    Sts: { Cd: 'BOOK' },
    BookgDt: { Dt: e.bookingDate },
    AcctSvcrRef: e.ref,
    BkTxCd: { Domn: { Cd: 'PMNT', Fmly: { Cd: e.direction === 'credit' ? 'RCDT' : 'ICDT', SubFmlyCd: e.returnReason ? 'RRTN' : 'ESCT' } } },
    ...(Object.keys(tx).length ? { NtryDtls: { TxDtls: tx } } : {}),
  };
}

export interface CashInput {
  messageId: string;
  createdAt: Date;
  reportId: string;
  account: AccountId;
  currency: string;
  entries: CashEntryInput[];
  /** camt.053 only: the opening and closing booked balances (signed minor units) and their date. */
  opening?: bigint;
  closing?: bigint;
  date?: string;
}

function balanceXml(code: 'OPBD' | 'CLBD', amount: bigint, currency: string, date: string) {
  return {
    Tp: { CdOrPrtry: { Cd: code } },
    Amt: { '@_Ccy': currency, '#text': amountText(amount < 0n ? -amount : amount, currency) },
    CdtDbtInd: amount < 0n ? 'DBIT' : 'CRDT',
    Dt: { Dt: date },
  };
}

export function buildCamt054(input: CashInput): string {
  return buildBankXml(NS['camt.054'], {
    BkToCstmrDbtCdtNtfctn: {
      GrpHdr: { MsgId: input.messageId, CreDtTm: isoSeconds(input.createdAt) },
      Ntfctn: {
        Id: input.reportId,
        CreDtTm: isoSeconds(input.createdAt),
        Acct: { Id: accountXml(input.account), Ccy: input.currency },
        ...(input.entries.length ? { Ntry: input.entries.map(entryXml) } : {}),
      },
    },
  });
}

export function buildCamt053(input: CashInput): string {
  const date = input.date ?? isoDate(input.createdAt);
  return buildBankXml(NS['camt.053'], {
    BkToCstmrStmt: {
      GrpHdr: { MsgId: input.messageId, CreDtTm: isoSeconds(input.createdAt) },
      Stmt: {
        Id: input.reportId,
        CreDtTm: isoSeconds(input.createdAt),
        Acct: { Id: accountXml(input.account), Ccy: input.currency },
        Bal: [balanceXml('OPBD', input.opening ?? 0n, input.currency, date), balanceXml('CLBD', input.closing ?? 0n, input.currency, date)],
        ...(input.entries.length ? { Ntry: input.entries.map(entryXml) } : {}),
      },
    },
  });
}
