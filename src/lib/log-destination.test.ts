import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { processLogDestination } from './log-destination.js';
import { metricsRegistry } from './metrics.js';

const droppedLines = async () => (await metricsRegistry.getSingleMetric('fsapi_log_lines_dropped_total')!.get()).values[0]?.value ?? 0;

/** A stream standing for standard output; `stalled`: it takes nothing (a log reader that hung), so what is written stays queued. */
function fakeOutput(stalled: boolean) {
  const writes: string[] = [];
  const output = new Writable({
    highWaterMark: 1 << 30,
    write(chunk: Buffer, _encoding, done) {
      writes.push(chunk.toString());
      if (!stalled) done();
    },
  });
  return { output, writes };
}

const line = (i: number) => `{"msg":"request completed","n":${String(i).padStart(6, '0')}}\n`;
/** Lines in a chunk: those that reach 4 KiB. */
const perChunk = Math.ceil(4096 / line(0).length);
const lines = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => line(from + i)).join('');

describe('the process log destination', () => {
  it('writes lines a 4 KiB chunk at a time, and what is left at the next tick', async () => {
    const { output, writes } = fakeOutput(false);
    const destination = processLogDestination({ maxBufferedBytes: 1 << 20, output });
    for (let i = 0; i < perChunk + 10; i++) destination.write(line(i));
    expect(writes).toEqual([lines(0, perChunk)]);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(writes).toEqual([lines(0, perChunk), lines(perChunk, perChunk + 10)]);
  });

  it('drops, and counts by the line, the chunks beyond its bound while the output takes nothing', async () => {
    const { output, writes } = fakeOutput(true);
    const destination = processLogDestination({ maxBufferedBytes: 10_000, output });
    const before = await droppedLines();
    for (let i = 0; i < 8 * perChunk; i++) destination.write(line(i)); // 8 chunks of a little over 4 KiB
    // The first chunk is being written, the second waits in the stream's queue; the third and
    // every one after would pass the bound.
    expect(writes).toEqual([lines(0, perChunk)]);
    expect(output.writableLength).toBe(2 * lines(0, perChunk).length);
    expect((await droppedLines()) - before).toBe(6 * perChunk);
  });

  it('drops and counts every line once the output fails (a closed pipe), and throws nothing', async () => {
    const output = new Writable({ write: (_chunk, _encoding, done) => done(Object.assign(new Error('write EPIPE'), { code: 'EPIPE' })) });
    const destination = processLogDestination({ maxBufferedBytes: 1 << 20, output });
    const before = await droppedLines();
    for (let i = 0; i < perChunk; i++) destination.write(line(i)); // written: the stream fails
    await new Promise((resolve) => setImmediate(resolve));
    for (let i = 0; i < 2 * perChunk; i++) destination.write(line(i));
    expect((await droppedLines()) - before).toBe(2 * perChunk);
  });
});
