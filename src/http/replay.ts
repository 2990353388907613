/** Thrown by a claim that finds a finished request: the route answers with the stored response. */
export class ReplayResponse extends Error {
  constructor(
    readonly status: number,
    readonly bodyText: string,
  ) {
    super('idempotent replay');
  }
}
