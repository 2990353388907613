/**
 * Card network connector. A network sends the issuer (us) authorization requests and later
 * clearing (capture) or reversal messages; the issuer decides and answers. The connector turns a
 * network's messages into these plain requests, so the issuing logic (modules/cards/payments.ts)
 * is the same whatever network or simulator feeds it.
 *
 * Sandbox: the simulator routes (`/v1/simulations/cards/...`) are the network. Live: no network is
 * connected yet (the simulator routes are 404 there).
 */

/** Reasons the network itself refuses before the issuer looks (sandbox: forced by the caller). */
export type NetworkDecline =
  | 'insufficient_funds'
  | 'card_frozen'
  | 'card_inactive'
  | 'card_blocked'
  | 'card_expired'
  | 'limit_exceeded'
  | 'merchant_category_blocked'
  | 'do_not_honor';

export interface AuthorizationRequest {
  cardId: string;
  /** In the card's currency, minor units (the network converts before it asks). */
  amount: bigint;
  merchantName: string;
  merchantCategory: string | null;
  /** Set when the network declines on its own; the issuer then records the decline as given. */
  networkDecline: NetworkDecline | null;
}

export interface SettlementRequest {
  authorizationId: string;
  /** Clearing amount; absent = the authorized amount. */
  amount: bigint | null;
}

export interface CardNetwork {
  readonly name: string;
  authorization(input: {
    cardId: string;
    amount: bigint;
    merchantName: string;
    merchantCategory?: string | undefined;
    declineReason?: NetworkDecline | undefined;
  }): AuthorizationRequest;
  settlement(authorizationId: string, amount: bigint | undefined): SettlementRequest;
}

/** The sandbox network: what the simulator sends is what the issuer sees, forced declines included. */
export const sandboxCardNetwork: CardNetwork = {
  name: 'sandbox',
  authorization: (input) => ({
    cardId: input.cardId,
    amount: input.amount,
    merchantName: input.merchantName,
    merchantCategory: input.merchantCategory ?? null,
    networkDecline: input.declineReason ?? null,
  }),
  settlement: (authorizationId, amount) => ({ authorizationId, amount: amount ?? null }),
};
