import { AppError } from '../../core/errors.js';

/** The bank-file errors whose message carries the request's values: one phrasing per code. */
export const fileTooLarge = (name: string, maxBytes: number) =>
  new AppError('payload_too_large', `${name} is larger than ${maxBytes} bytes`);

export const transportFailed = (transport: string, what: string, reason: string) =>
  new AppError('service_unavailable', `The bank's ${transport} transport failed to ${what}: ${reason}`);

export const connectionHeld = (environment: string, currency: string) =>
  new AppError('conflict', `An active connection already holds ${environment} ${currency}: disable it first`);

export const entryCurrencyMismatch = (accountCurrency: string, entryCurrency: string) =>
  new AppError('currency_mismatch', `The account holds ${accountCurrency}; the entry is ${entryCurrency}`);
