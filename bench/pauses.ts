import type { Row } from './suite.js';

/**
 * prom-client samples the event loop with a timer every 10 ms (its `eventLoopMonitoringPrecision`)
 * and records the time between two firings, so an idle loop reads 10 ms: the delay a request
 * could meet is the reading less this interval.
 */
const LOOP_SAMPLING_MS = 10;

/**
 * What stopped the server's event loop during a latency run, read from its /metrics before and
 * after (prom-client's default metrics): garbage-collection pauses by kind (count, total, and
 * how many took 10 ms or more) and the event loop's delay over the run (its histogram is reset
 * at every scrape, so the figures after the run cover the run alone). Beside them, the transfer
 * batches (db/batcher.ts): how long each batch's oldest request waited for a lane, how long each
 * batch held its lane (its statements and commit), and how many started on a spare lane. A tail
 * with no pause and no slow batch comes from the queue; one with slow batches, from the database.
 */
export async function pauseProbe(base: string): Promise<() => Promise<Pauses>> {
  const before = parse(await scrape(base));
  return async () => {
    const after = parse(await scrape(base));
    const gc = (kind: string) => {
      const d = (name: string) => (after.get(`${name}|${kind}`) ?? 0) - (before.get(`${name}|${kind}`) ?? 0);
      return {
        count: d('count'),
        totalMs: d('sum') * 1000,
        over10ms: d('count') - d('le=0.01'),
      };
    };
    const hist = (name: string) => {
      const buckets: { le: number; count: number }[] = [];
      for (const [key, value] of after) {
        const m = new RegExp(`^${name}\\|le=(.+)$`).exec(key);
        if (m) buckets.push({ le: Number(m[1]), count: value - (before.get(key) ?? 0) });
      }
      return buckets.sort((a, b) => a.le - b.le);
    };
    const d = (key: string) => (after.get(key) ?? 0) - (before.get(key) ?? 0);
    return {
      batches: {
        count: d('batch_size|count'),
        items: d('batch_size|sum'),
        spare: d('spare|count'),
        wait: hist('wait'),
        lane: hist('lane'),
      },
      minor: gc('minor'),
      major: gc('major'),
      incremental: gc('incremental'),
      loopP99Ms: Math.max(0, (after.get('lag_p99') ?? NaN) * 1000 - LOOP_SAMPLING_MS),
      loopMaxMs: Math.max(0, (after.get('lag_max') ?? NaN) * 1000 - LOOP_SAMPLING_MS),
    };
  };
}

export interface GcPauses {
  count: number;
  totalMs: number;
  over10ms: number;
}

/** Cumulative histogram buckets over the run (Prometheus `le`, seconds). */
type Buckets = { le: number; count: number }[];

export interface Pauses {
  batches: { count: number; items: number; spare: number; wait: Buckets; lane: Buckets };
  minor: GcPauses;
  major: GcPauses;
  incremental: GcPauses;
  loopP99Ms: number;
  loopMaxMs: number;
}

export function pausesRow(what: string, p: Pauses, seconds: number, transfers: number): Row {
  const kind = (name: string, g: GcPauses) =>
    `${name} ${g.count} (${g.totalMs.toFixed(1)} ms in all${g.over10ms > 0 ? `, ${g.over10ms} of 10 ms or more` : ''})`;
  const gcShare = (p.minor.totalMs + p.major.totalMs + p.incremental.totalMs) / (seconds * 10);
  const b = p.batches;
  const batches =
    b.count > 0
      ? `; ${b.count} batches of ${(b.items / b.count).toFixed(1)} on average (${b.spare} on a spare lane): ` +
        `oldest request's wait for a lane p50 ${quantile(b.wait, 0.5)}, p99 ${quantile(b.wait, 0.99)}; ` +
        `lane held p50 ${quantile(b.lane, 0.5)}, p99 ${quantile(b.lane, 0.99)}`
      : '';
  return {
    name: `server pauses during ${what}`,
    measured:
      `garbage collection: ${kind('minor', p.minor)} (one every ${Math.round(transfers / Math.max(1, p.minor.count))} transfers), ${kind('major', p.major)}, ${kind('incremental marking', p.incremental)}; ` +
      `${gcShare.toFixed(1)} % of the run; event loop delay beyond its 10 ms sampling p99 ${p.loopP99Ms.toFixed(1)} ms, max ${p.loopMaxMs.toFixed(1)} ms` +
      batches,
    reference: '',
    target: '',
  };
}

/** The bucket bound a quantile falls under, as text ("≤ 5 ms"; "> 1000 ms" past the last bound). */
function quantile(buckets: Buckets, q: number): string {
  const total = buckets.find((x) => x.le === Infinity)?.count ?? 0;
  if (total === 0) return 'n/a';
  const hit = buckets.find((x) => x.count >= q * total)!;
  if (hit.le !== Infinity) return `≤ ${hit.le * 1000} ms`;
  const last = buckets.filter((x) => x.le !== Infinity).at(-1);
  return last ? `> ${last.le * 1000} ms` : 'n/a';
}

async function scrape(base: string): Promise<string> {
  const res = await fetch(new URL('/metrics', base));
  return res.text();
}

/**
 * The few series read here, keyed `count|kind`, `sum|kind`, `le=0.01|kind`, `lag_p99`, `lag_max`,
 * and for the transfer batches `batch_size|count`, `batch_size|sum`, `spare|count`, `wait|le=…`, `lane|le=…`.
 */
function parse(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    const gc = /^nodejs_gc_duration_seconds_(count|sum|bucket)\{([^}]*)\} (\S+)$/.exec(line);
    if (gc) {
      const kind = /kind="([^"]+)"/.exec(gc[2]!)?.[1] ?? '';
      const le = /le="([^"]+)"/.exec(gc[2]!)?.[1];
      if (gc[1] === 'bucket' && le !== '0.01') continue;
      out.set(`${gc[1] === 'bucket' ? 'le=0.01' : gc[1]}|${kind}`, Number(gc[3]));
      continue;
    }
    const batch =
      /^fsapi_(commit_batch_size|batch_wait_seconds|batch_lane_seconds|batch_spare_lane_starts_total)(_bucket|_count|_sum)?\{([^}]*)\} (\S+)$/.exec(
        line,
      );
    if (batch) {
      if (!batch[3]!.includes('batch="transfers"')) continue;
      const name = {
        commit_batch_size: 'batch_size',
        batch_wait_seconds: 'wait',
        batch_lane_seconds: 'lane',
        batch_spare_lane_starts_total: 'spare',
      }[batch[1]!]!;
      const le = /le="([^"]+)"/.exec(batch[3]!)?.[1];
      const part = batch[2] === '_bucket' ? `le=${le === '+Inf' ? 'Infinity' : le}` : (batch[2]?.slice(1) ?? 'count');
      out.set(`${name}|${part}`, Number(batch[4]));
      continue;
    }
    const lag = /^nodejs_eventloop_lag_(p99|max)_seconds (\S+)$/.exec(line);
    if (lag) out.set(`lag_${lag[1]}`, Number(lag[2]));
  }
  return out;
}
