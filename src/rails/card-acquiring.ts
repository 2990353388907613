import type { Environment } from '../core/context.js';

/**
 * The card acquiring connector (collections): charges a card the payer gave us. The sandbox
 * answers by the magic numbers (docs/api-rules.md#sandbox); live has no acquirer configured yet and declines
 * with `processor_unavailable` rather than pretend.
 */
export type ChargeResult = { approved: true; authorizationCode: string } | { approved: false; code: string; message: string };

export interface CardAcquirer {
  charge(input: { pan: string; amount: bigint; currency: string }): Promise<ChargeResult>;
}

const SANDBOX_DECLINES: Record<string, { code: string; message: string }> = {
  '4000000000000002': { code: 'card_declined', message: 'Your card was declined' },
  '4000000000009995': { code: 'insufficient_funds', message: 'Your card has insufficient funds' },
};

export class SandboxAcquirer implements CardAcquirer {
  async charge(input: { pan: string }): Promise<ChargeResult> {
    const decline = SANDBOX_DECLINES[input.pan];
    if (decline) return { approved: false, ...decline };
    return { approved: true, authorizationCode: `SBX${Date.now().toString(36).toUpperCase()}` };
  }
}

export class UnconfiguredAcquirer implements CardAcquirer {
  async charge(): Promise<ChargeResult> {
    return { approved: false, code: 'processor_unavailable', message: 'Card payments are not configured for live yet' };
  }
}

export function cardAcquirer(environment: Environment): CardAcquirer {
  return environment === 'sandbox' ? new SandboxAcquirer() : new UnconfiguredAcquirer();
}
