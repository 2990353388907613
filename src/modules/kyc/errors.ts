import { AppError } from '../../core/errors.js';

/** The KYC errors whose message carries the request's values: one phrasing per code. */
export const documentTooLarge = (maxBytes: number) =>
  new AppError('payload_too_large', `The document exceeds the maximum size of ${Math.floor(maxBytes / 1024 / 1024)} MB`);

export const kycAlreadyCompleted = (level: string) =>
  new AppError('kyc_already_completed', `KYC verification has already been completed for this customer (level ${level})`);
