import { randomInt } from 'node:crypto';
import { composeIBAN, isValidBIC, isValidIBAN } from 'ibantools';

/**
 * Bank details a payer can use to send money into an account: the right shape per currency and
 * valid check digits (NUBAN, ABA, IBAN, CLABE), so a payer's bank-side validation accepts them.
 * The numbers are our partner bank's (sandbox values); the account number part is random and
 * unique per currency (the accounts table has a unique index and retries on a clash).
 */
export interface BankDetails {
  account_number: string;
  account_name: string;
  bank_name: string;
  bank_code: string | null;
  country: string;
  routing_number: string | null;
  sort_code: string | null;
  iban: string | null;
  bic: string | null;
  clabe: string | null;
  branch_code: string | null;
}

export type DigitSource = (count: number) => string;

/** `count` random decimal digits (the first may be zero). */
export const randomDigits: DigitSource = (count) => {
  let out = '';
  for (let i = 0; i < count; i++) out += String(randomInt(10));
  return out;
};

const digitsOf = (s: string) => [...s].map(Number);

/** NUBAN (CBN): check digit over the 3-digit bank code and 9-digit serial, weights 3,7,3,... */
export function nubanCheckDigit(bankCode: string, serial: string): number {
  const weights = [3, 7, 3, 3, 7, 3, 3, 7, 3, 3, 7, 3];
  const sum = digitsOf(bankCode + serial).reduce((acc, d, i) => acc + d * weights[i]!, 0);
  const check = 10 - (sum % 10);
  return check === 10 ? 0 : check;
}

export function isValidNuban(accountNumber: string, bankCode: string): boolean {
  if (!/^\d{10}$/.test(accountNumber) || !/^\d{3}$/.test(bankCode)) return false;
  return nubanCheckDigit(bankCode, accountNumber.slice(0, 9)) === Number(accountNumber[9]);
}

/** ABA routing number: 3(d1+d4+d7) + 7(d2+d5+d8) + (d3+d6+d9) is a multiple of 10. */
export function abaCheckDigit(first8: string): number {
  const d = digitsOf(first8);
  const sum = 3 * (d[0]! + d[3]! + d[6]!) + 7 * (d[1]! + d[4]! + d[7]!) + (d[2]! + d[5]!);
  return (10 - (sum % 10)) % 10;
}

export function isValidAbaRouting(routing: string): boolean {
  return /^\d{9}$/.test(routing) && abaCheckDigit(routing.slice(0, 8)) === Number(routing[8]);
}

/** CLABE (Mexico): weights 3,7,1 repeated; check = (10 - sum of (d*w mod 10)) mod 10. */
export function clabeCheckDigit(first17: string): number {
  const weights = [3, 7, 1];
  const sum = digitsOf(first17).reduce((acc, d, i) => acc + ((d * weights[i % 3]!) % 10), 0);
  return (10 - (sum % 10)) % 10;
}

export function isValidClabe(clabe: string): boolean {
  return /^\d{18}$/.test(clabe) && clabeCheckDigit(clabe.slice(0, 17)) === Number(clabe[17]);
}

export { isValidIBAN, isValidBIC };

/** Our partner bank per currency (sandbox values; a live deployment configures its own). */
const BANK = {
  NGN: { name: 'FSAPI Partner Bank Nigeria', code: '999' },
  USD: { name: 'FSAPI Partner Bank US', routingPrefix: '02100002' },
  EUR: { name: 'FSAPI Partner Bank Europe', blz: '10010010', bic: 'FSAPDEFFXXX' },
  GBP: { name: 'FSAPI Partner Bank UK', bankCode: 'FSAP', sortCode: '040075', bic: 'FSAPGB2LXXX' },
} as const;

function base(accountName: string, country: string, bankName: string, accountNumber: string): BankDetails {
  return {
    account_number: accountNumber,
    account_name: accountName,
    bank_name: bankName,
    bank_code: null,
    country,
    routing_number: null,
    sort_code: null,
    iban: null,
    bic: null,
    clabe: null,
    branch_code: null,
  };
}

function iban(countryCode: string, bban: string): string {
  const value = composeIBAN({ countryCode, bban });
  if (!value || !isValidIBAN(value)) throw new Error(`could not compose an IBAN for ${countryCode}`);
  return value;
}

/** Other currencies: local account number and bank/branch code of the country's usual length. */
const LOCAL_SHAPES: Record<string, { country: string; digits: number; bankCode?: string; branchCode?: string }> = {
  GHS: { country: 'GH', digits: 13, bankCode: '300335' },
  KES: { country: 'KE', digits: 12, bankCode: '68', branchCode: '000' },
  UGX: { country: 'UG', digits: 10, bankCode: '130' },
  ZAR: { country: 'ZA', digits: 10, branchCode: '250655' },
};

/** Generates the bank details of a new account in `currency`. */
export function generateBankDetails(currency: string, accountName: string, digits: DigitSource = randomDigits): BankDetails {
  switch (currency) {
    case 'NGN': {
      const serial = digits(9);
      const number = serial + String(nubanCheckDigit(BANK.NGN.code, serial));
      return { ...base(accountName, 'NG', BANK.NGN.name, number), bank_code: BANK.NGN.code };
    }
    case 'USD': {
      const routing = BANK.USD.routingPrefix + String(abaCheckDigit(BANK.USD.routingPrefix));
      return { ...base(accountName, 'US', BANK.USD.name, `8${digits(11)}`), routing_number: routing };
    }
    case 'EUR': {
      const number = digits(10);
      return {
        ...base(accountName, 'DE', BANK.EUR.name, number),
        bank_code: BANK.EUR.blz,
        iban: iban('DE', BANK.EUR.blz + number),
        bic: BANK.EUR.bic,
      };
    }
    case 'GBP': {
      const number = digits(8);
      return {
        ...base(accountName, 'GB', BANK.GBP.name, number),
        bank_code: BANK.GBP.bankCode,
        sort_code: BANK.GBP.sortCode,
        iban: iban('GB', BANK.GBP.bankCode + BANK.GBP.sortCode + number),
        bic: BANK.GBP.bic,
      };
    }
    case 'MXN': {
      const first17 = `646180${digits(11)}`; // bank 646, plaza 180, 11-digit account
      const clabe = first17 + String(clabeCheckDigit(first17));
      return { ...base(accountName, 'MX', 'FSAPI Partner Bank Mexico', clabe), bank_code: '646', clabe };
    }
    case 'XOF': {
      // BCEAO RIB inside a Senegalese IBAN: bank code SN + 3 digits, branch 5, account 12, key 2.
      const bban = `SN100${digits(19)}`;
      return { ...base(accountName, 'SN', 'FSAPI Partner Bank UEMOA', bban.slice(10, 22)), bank_code: 'SN100', iban: iban('SN', bban) };
    }
    case 'XAF': {
      // CEMAC RIB inside a Cameroonian IBAN: bank 5, branch 5, account 11, key 2.
      const bban = `10005${digits(18)}`;
      return { ...base(accountName, 'CM', 'FSAPI Partner Bank CEMAC', bban.slice(10, 21)), bank_code: '10005', iban: iban('CM', bban) };
    }
    default: {
      const shape = LOCAL_SHAPES[currency] ?? { country: 'XX', digits: 10 };
      return {
        ...base(accountName, shape.country, `FSAPI Partner Bank ${currency}`, digits(shape.digits)),
        bank_code: shape.bankCode ?? null,
        branch_code: shape.branchCode ?? null,
      };
    }
  }
}
