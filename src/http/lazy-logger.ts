import type { FastifyBaseLogger } from 'fastify';
import type { Bindings, ChildLoggerOptions } from 'pino';

/** A log call's arguments, passed on exactly as given (a message alone, or an object first). */
type LogArgs = [obj: unknown, ...rest: unknown[]];
type Write = (...args: LogArgs) => void;

/**
 * A request's logger that becomes pino's child logger (with the request id bound) the first time
 * something is written through it, not when the request arrives. Making the child serializes its
 * bindings through the logger's redaction, whose wildcard paths (`*.password`, ...) run every
 * bound value through the redactor: a visible share of the server's CPU (docs/benchmarks.md#the-figures-behind-the-defaults), for a
 * logger that a request answered normally never writes to (the access line has a logger of its
 * own, see app.ts). Lines written through it are the child's own: they carry the request id and
 * the same redaction as before. A class, so that making one per request is one small object.
 */
class LazyChildLogger implements FastifyBaseLogger {
  private made: FastifyBaseLogger | undefined;

  constructor(
    private readonly parent: FastifyBaseLogger,
    private readonly bindings: Bindings,
    private readonly options: ChildLoggerOptions,
  ) {}

  private get real(): FastifyBaseLogger {
    return (this.made ??= this.parent.child(this.bindings, this.options));
  }

  get level(): string {
    return this.made?.level ?? this.options.level ?? this.parent.level;
  }

  set level(level: string) {
    this.real.level = level;
  }

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.real.child(bindings, options);
  }

  fatal(...args: LogArgs): void {
    (this.real.fatal as Write)(...args);
  }

  error(...args: LogArgs): void {
    (this.real.error as Write)(...args);
  }

  warn(...args: LogArgs): void {
    (this.real.warn as Write)(...args);
  }

  info(...args: LogArgs): void {
    (this.real.info as Write)(...args);
  }

  debug(...args: LogArgs): void {
    (this.real.debug as Write)(...args);
  }

  trace(...args: LogArgs): void {
    (this.real.trace as Write)(...args);
  }

  silent(...args: LogArgs): void {
    (this.real.silent as Write)(...args);
  }
}

/** Fastify's childLoggerFactory (app.ts): see LazyChildLogger. */
export function lazyChildLogger(parent: FastifyBaseLogger, bindings: Bindings, options: ChildLoggerOptions): FastifyBaseLogger {
  return new LazyChildLogger(parent, bindings, options);
}
