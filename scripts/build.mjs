// Production build: compiles src/ to dist/ with tsc (incremental: a rebuild without changes is
// quick) and copies what tsc does not emit (migrations, dashboard assets, data files) to the same
// place under dist/, so compiled modules find them exactly as the sources do. Files in dist/ whose
// source is gone are removed (a stale migration must never be applied). `npm start` runs this first.
import { spawnSync } from 'node:child_process';
import process from 'node:process';
import { cpSync, existsSync, readdirSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const src = join(root, 'src');
const dist = join(root, 'dist');

const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
const result = spawnSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json')], { stdio: 'inherit' });
if (result.status !== 0) process.exit(result.status ?? 1);

function walk(dir, visit) {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) walk(path, visit);
    else visit(path, name);
  }
}

// Assets: every file under src/ that is not TypeScript.
walk(src, (path, name) => {
  if (!name.endsWith('.ts')) cpSync(path, join(dist, relative(src, path)));
});

// Prune: a compiled module whose .ts is gone, or an asset whose source is gone.
walk(dist, (path, name) => {
  if (name === '.tsbuildinfo') return;
  const rel = relative(dist, path);
  const compiled = /\.js(\.map)?$/.exec(rel);
  const source = compiled ? join(src, rel.slice(0, compiled.index) + '.ts') : join(src, rel);
  if (!existsSync(source) && !(compiled && existsSync(join(src, rel)))) rmSync(path);
});
