import type pino from 'pino';
import { countDroppedLogLines } from './metrics.js';

export interface LogDestinationOptions {
  /** Most bytes of log lines held while standard output does not take them; beyond, lines are dropped. */
  maxBufferedBytes: number;
  /** Where the lines go (standard output; a test's stream). */
  output?: NodeJS.WritableStream & { writableLength: number };
}

/** Lines are written once this many bytes are waiting, */
const WRITE_AT_BYTES = 4096;
/** and whatever is waiting, every this often. */
const WRITE_EVERY_MS = 200;

/**
 * Where the server's process log goes: standard output, written in chunks off the request's
 * path, with a bounded buffer.
 *
 * pino's default destination wrote each line (one access line per request) with a write of its
 * own handed to libuv's thread pool: a dispatch, a wake-up and a callback per request
 * (docs/benchmarks.md#the-figures-behind-the-defaults). Here lines wait until 4 KiB (about
 * 16 lines) are ready, or at the next 200 ms tick, so a quiet server's lines still appear
 * within a fifth of a second to a person watching, and a busy one writes a chunk at a time.
 * A chunk goes to `process.stdout`: on a pipe or socket (a log collector) Node writes it at once
 * when there is room and otherwise queues it and waits for room on the event loop; on a file or
 * terminal it writes it at once. No thread pool: pino's destination (sonic-boom) handed every
 * chunk to one, and measured the UTF-8 length of all it held at every line it was given.
 *
 * The bound: when standard output stops taking lines (a log collector that hangs, a pipe nobody
 * reads), the default destination kept every line in memory, retrying every 100 ms: the process
 * grew with every request, without a bound. Here up to `maxBufferedBytes` wait in the stream's
 * queue, then new lines are dropped and counted (`fsapi_log_lines_dropped_total` on /metrics):
 * the API keeps serving. What waits here is handed over when the process exits; what the pipe
 * has not taken by then is lost with the process.
 */
export function processLogDestination(options: LogDestinationOptions): pino.DestinationStream {
  const output = options.output ?? process.stdout;
  // A closed pipe (EPIPE: the log collector went away) fails the stream, which would throw
  // without a listener and end the process: from then on, lines are dropped and counted.
  let closed = false;
  output.on('error', () => {
    closed = true;
  });
  let waiting = '';
  const handOver = () => {
    if (waiting === '') return;
    const chunk = waiting;
    waiting = '';
    if (closed || output.writableLength + chunk.length > options.maxBufferedBytes) countDroppedLogLines(linesIn(chunk));
    else output.write(chunk);
  };
  setInterval(handOver, WRITE_EVERY_MS).unref();
  process.on('exit', handOver);
  return {
    write(line: string) {
      waiting += line;
      if (waiting.length >= WRITE_AT_BYTES) handOver();
    },
  };
}

function linesIn(chunk: string): number {
  let lines = 0;
  for (let at = chunk.indexOf('\n'); at !== -1; at = chunk.indexOf('\n', at + 1)) lines++;
  return lines;
}
