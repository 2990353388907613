import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { havePgbench, latenciesOfLogDir, loggedLatenciesMs, withPgbenchDatabase } from '../../bench/pgbench.js';

const pgUrl = process.env.DATABASE_URL;
const hasPgbench = havePgbench();

describe("pgbench's per-transaction log, read by the bench", () => {
  it('takes the latency field as it is: with --rate it already holds the schedule lag', () => {
    // client, transaction, latency µs, script, epoch s, µs, schedule lag µs
    const log = ['0 0 1250 0 1764900000 100 300', '1 0 skipped 0 1764900000 200 9000', '1 1 800 0 1764900000 300 0', ''].join('\n');
    expect(loggedLatenciesMs(log)).toEqual([1.25, 0.8]);
  });

  describe.skipIf(!pgUrl || !hasPgbench)('against pgbench itself', () => {
    it('gives the mean pgbench reports as its own latency average at a fixed rate', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'fsapi-pgbench-log-test-'));
      try {
        await withPgbenchDatabase(pgUrl!, `fsapi_pgbench_log_${process.pid}`, 1, async (url) => {
          const out = execFileSync(
            'pgbench',
            ['-n', '-c', '2', '-j', '1', '-T', '2', '-R', '300', '-l', `--log-prefix=${join(dir, 'tx')}`, url],
            {
              encoding: 'utf8',
            },
          );
          const reported = Number(/latency average = ([\d.]+) ms/.exec(out)?.[1]);
          const lagged = Number(/schedule lag: avg ([\d.]+)/.exec(out)?.[1]);
          const latencies = latenciesOfLogDir(dir);
          const mean = latencies.reduce((a, b) => a + b, 0) / latencies.length;
          expect(latencies.length).toBeGreaterThan(300);
          expect(lagged).toBeGreaterThan(0);
          // pgbench prints the average to the µs; the log's sum gives the same figure.
          expect(Math.abs(mean - reported)).toBeLessThan(0.002);
        });
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }, 30_000);
  });
});
