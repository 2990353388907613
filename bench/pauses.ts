import type { Row } from './suite.js';

/**
 * What stopped the server's event loop during a latency run, read from its /metrics before and
 * after (prom-client's default metrics): garbage-collection pauses by kind (count, total, and
 * how many took 10 ms or more) and the event loop's delay over the run (its histogram is reset
 * at every scrape, so the figures after the run cover the run alone). A tail the database does
 * not have, with no pause here, comes from somewhere else (queueing, the load generator).
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
    return {
      minor: gc('minor'),
      major: gc('major'),
      incremental: gc('incremental'),
      loopP99Ms: (after.get('lag_p99') ?? NaN) * 1000,
      loopMaxMs: (after.get('lag_max') ?? NaN) * 1000,
    };
  };
}

export interface GcPauses {
  count: number;
  totalMs: number;
  over10ms: number;
}

export interface Pauses {
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
  return {
    name: `server pauses during ${what}`,
    measured:
      `garbage collection: ${kind('minor', p.minor)} (one every ${Math.round(transfers / Math.max(1, p.minor.count))} transfers), ${kind('major', p.major)}, ${kind('incremental marking', p.incremental)}; ` +
      `${gcShare.toFixed(1)} % of the run; event loop delay p99 ${p.loopP99Ms.toFixed(1)} ms, max ${p.loopMaxMs.toFixed(1)} ms`,
    reference: '',
    target: '',
  };
}

async function scrape(base: string): Promise<string> {
  const res = await fetch(new URL('/metrics', base));
  return res.text();
}

/** The few series read here, keyed `count|kind`, `sum|kind`, `le=0.01|kind`, `lag_p99`, `lag_max`. */
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
    const lag = /^nodejs_eventloop_lag_(p99|max)_seconds (\S+)$/.exec(line);
    if (lag) out.set(`lag_${lag[1]}`, Number(lag[2]));
  }
  return out;
}
