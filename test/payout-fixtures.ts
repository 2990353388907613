import { nubanCheckDigit } from '../src/lib/payee-validation.js';

/** The sender details a cross-border payout needs (the reference's example person). */
export const remitter = {
  remitter_full_name: 'John Doe',
  remitter_country: 'US',
  remitter_document_number: 'A123456789',
  remitter_document_issue_date: '2020-01-15',
  remitter_document_expiry_date: '2035-01-15',
  remitter_date_of_birth: '1990-06-25',
  remitter_address: { address_line1: '123 Main Street', city: 'New York', state: 'US-NY', postal_code: '10001', country: 'US' },
  remitter_nationality: 'US',
};

/** Valid GTBank (058) NUBANs, a new one per call, from `start` on (each file its own range). */
export function nubans(start: number): () => string {
  let serial = start;
  return () => {
    const s = `${serial++}123`;
    return s + String(nubanCheckDigit('058', s));
  };
}
