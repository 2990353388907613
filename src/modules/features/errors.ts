import { AppError, type ErrorDetail } from '../../core/errors.js';

/** The feature and KYC-gate errors whose message carries the request's values: one phrasing per code. */
export const featureNotActive = (featureId: string, details: ErrorDetail[] = []) =>
  new AppError('feature_not_active', `The feature ${featureId} is not active for this customer`, details);

/** Without a level: no KYC is approved at all. */
export const kycLevelInsufficient = (level?: string, details: ErrorDetail[] = []) =>
  new AppError('kyc_level_insufficient', level ? `This needs KYC approved at level ${level}` : 'This needs approved KYC', details);
