/**
 * What the HTTP layer hands to the API request log (src/modules/request-log) for each finished
 * /v1 request. Shared here because http/ may not know the module and the module may not know http/.
 */
export interface CapturedRequest {
  tenantId: string;
  environment: string;
  requestId: string;
  /** The server made `requestId` (the client sent no valid X-Request-Id): a UUIDv7 of the request's arrival. */
  requestIdMadeHere?: boolean;
  method: string;
  /** Path and query as received. */
  url: string;
  status: number;
  durationMs: number;
  idempotencyKey: string | null;
  replayed: boolean;
  keyPrefix: string | null;
  /** The parsed request body (kept by reference; redacted and serialized by the flusher). */
  requestBody: unknown;
  /** The response payload as sent, when it was text (null when `responseEventId` says it). */
  responseBody: string | null;
  /** The answer's writer knew `responseBody` to hold no key that redaction hides: its keys need no scan. */
  responseKeysClean?: boolean;
  /** The event whose data the answer is (a transfer's): the log points at it rather than keep the text. */
  responseEventId?: string | null;
  /** Epoch milliseconds when the request arrived. */
  startedAt: number;
  /** Given by the flusher the first time it writes the entry, so a retried write never doubles it. */
  id?: string;
}

/** The request log as the HTTP layer sees it: an append that never waits, and a flush. */
export interface RequestLogSink {
  record(entry: CapturedRequest): void;
  flush(): Promise<void>;
}

/** Bodies above this are not parsed or kept at all (KYC documents, exports). */
export const MAX_CAPTURED_BODY_BYTES = 256 * 1024;
