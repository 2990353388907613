import { AppError } from '../../core/errors.js';

/** The webhook state errors, one phrasing each wherever the module raises them. */
export const endpointDisabled = () => new AppError('invalid_state_transition', 'The webhook endpoint is disabled; enable it first');

export const eventInDelivery = () => new AppError('invalid_state_transition', 'This webhook event is being delivered right now');
