import pino from 'pino';
import { countDroppedLogLine } from './metrics.js';

export interface LogDestinationOptions {
  /** Most bytes of log lines held while standard output does not take them; beyond, lines are dropped. */
  maxBufferedBytes: number;
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
 * The lines wait here, not in pino's destination (sonic-boom's `minLength`): that one measures
 * the UTF-8 length of everything it holds at every line it is given, so at 4 KiB a line cost
 * more than pino's formatting of it; it is handed whole chunks.
 *
 * The bound: when standard output stops taking lines (a log collector that hangs, a pipe nobody
 * reads), the default destination kept every line in memory, retrying every 100 ms: the process
 * grew with every request, without a bound. Here it keeps up to `maxBufferedBytes`, then drops
 * new lines and counts them (`fsapi_log_lines_dropped_total` on /metrics): the API keeps serving.
 * What waits is written when the process exits.
 */
export function processLogDestination(options: LogDestinationOptions): pino.DestinationStream {
  watchExit();
  const output = pino.destination({
    dest: 1,
    sync: false,
    maxLength: options.maxBufferedBytes,
    // While running, a full pipe is waited for (off the event loop, lines beyond the buffer are
    // dropped); once the process exits, it is not: the exit's last flush writes synchronously and
    // retried a full pipe forever, so a server whose log reader hung never ended on SIGTERM.
    retryEAGAIN: () => !exiting,
  });
  output.on('drop', (chunk: string) => countDroppedLogLine(linesIn(chunk)));
  // A closed pipe (EPIPE) is already silenced by pino; a full one at exit throws from the last
  // flush (pino's, on exit): what it could not write is dropped, and the process ends.
  const flushSync = output.flushSync.bind(output);
  output.flushSync = () => {
    try {
      flushSync();
    } catch {
      // dropped: nobody is reading standard output
    }
  };
  let waiting = '';
  const handOver = () => {
    if (waiting === '') return;
    const chunk = waiting;
    waiting = '';
    output.write(chunk);
  };
  setInterval(handOver, WRITE_EVERY_MS).unref();
  atExit.add(handOver);
  return {
    write(line: string) {
      waiting += line;
      if (waiting.length >= WRITE_AT_BYTES) handOver();
    },
    flushSync() {
      handOver();
      output.flushSync();
    },
  } as pino.DestinationStream;
}

function linesIn(chunk: string): number {
  let lines = 0;
  for (let at = chunk.indexOf('\n'); at !== -1; at = chunk.indexOf('\n', at + 1)) lines++;
  return lines;
}

/** The chunks waiting at exit, handed to their destinations before pino's exit handler flushes those. */
const atExit = new Set<() => void>();
let exiting = false;
let watching = false;
/** Marks the exit, and hands over what waits, before pino's own exit handler flushes (prepended: it runs first). */
function watchExit() {
  if (watching) return;
  watching = true;
  process.prependListener('exit', () => {
    exiting = true;
    for (const handOver of atExit) handOver();
  });
}
