/**
 * The top self-time frames of V8 CPU profiles (`node --cpu-prof`), e.g. of the server under the bench:
 *
 *   BENCH_SERVER_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof" npm run bench -- spread reads
 *   npx tsx bench/profile-top.ts /tmp/prof [count] [seconds to skip]
 *
 * Each frame's share is of the busy samples (all but "(idle)"), summed over every profile in the
 * folder; frames are named by function, file and line, node_modules shortened to the package.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}
interface Profile {
  nodes: Node[];
  samples: number[];
  timeDeltas: number[];
}

/** Where a frame's code lives: the package, node's own, our dist/ or V8's (GC, program, …). */
const areaOf = (url: string) => {
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
  if (pkg) return pkg[1]!;
  if (url.startsWith('node:')) return 'node (JS)';
  if (/\/(dist|src)\//.test(url)) return 'ours (dist/)';
  return url || 'V8 and native';
};

const [dir, count = '10', skip = '0'] = process.argv.slice(2);
if (!dir) {
  console.error('usage: tsx bench/profile-top.ts <folder of .cpuprofile files> [count]');
  process.exit(2);
}

const place = (url: string) => {
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)\/(.*)$/.exec(url);
  if (pkg) return `${pkg[1]}/${pkg[2]}`;
  return url.replace(/^file:\/\/.*?\/(dist|src)\//, '$1/').replace(/^node:/, 'node:');
};

const self = new Map<string, number>();
const areas = new Map<string, number>();
let busy = 0;
for (const file of readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'))) {
  const profile = JSON.parse(readFileSync(join(dir, file), 'utf8')) as Profile;
  const names = new Map(
    profile.nodes.map((n) => {
      const { functionName, url, lineNumber } = n.callFrame;
      return [n.id, url ? `${functionName || '(anonymous)'} ${place(url)}:${lineNumber + 1}` : functionName || '(native)'];
    }),
  );
  const area = new Map(
    profile.nodes.map((n) => [n.id, n.callFrame.url ? areaOf(n.callFrame.url) : `${n.callFrame.functionName || 'native'}`]),
  );
  // The first `skip` seconds are the server starting (module loading, compiling): left out.
  let at = 0;
  profile.samples.forEach((id, i) => {
    at += profile.timeDeltas[i] ?? 0;
    const name = names.get(id) ?? '?';
    if (name === '(idle)' || at < Number(skip) * 1e6) return;
    busy++;
    self.set(name, (self.get(name) ?? 0) + 1);
    const a = area.get(id) ?? '?';
    areas.set(a, (areas.get(a) ?? 0) + 1);
  });
}
const top = [...self].sort((a, b) => b[1] - a[1]).slice(0, Number(count));
console.log(`| # | frame (self time) | share of busy samples |\n|---|---|---|`);
top.forEach(([name, n], i) => console.log(`| ${i + 1} | \`${name}\` | ${((100 * n) / busy).toFixed(1)} % |`));
console.log(`\n| where (self time summed) | share |\n|---|---|`);
for (const [a, n] of [...areas].sort((x, y) => y[1] - x[1]).slice(0, 12)) console.log(`| ${a} | ${((100 * n) / busy).toFixed(1)} % |`);
console.log(`\n${busy} busy samples`);
