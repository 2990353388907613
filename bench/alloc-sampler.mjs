// Preloaded into a bench server (`node --import <this file> dist/main.js`) by bench/xfer-ab.ts:
// what the server allocates and sends to PostgreSQL over a window the bench chooses.
//
// SIGUSR2 opens a window: V8's sampling heap profiler starts, keeping the samples of objects
// that the young and old collections have already freed (so the profile is what was allocated,
// not what is still alive), and the counts of statements bound and values sent are zeroed.
// The next SIGUSR2 closes it and writes { profile, binds, values } to ALLOC_SAMPLE_FILE.
import { writeFileSync, renameSync } from 'node:fs';
import { createRequire } from 'node:module';
import { Session } from 'node:inspector';
import process from 'node:process';

const file = process.env.ALLOC_SAMPLE_FILE;
if (file) {
  const require = createRequire(`${process.cwd()}/`);
  // pg's connection calls serialize.bind(config) for every statement it sends with parameters.
  const { serialize } = require('pg-protocol');
  const counts = { binds: 0, values: 0 };
  const bind = serialize.bind;
  serialize.bind = (config) => {
    counts.binds++;
    counts.values += config?.values?.length ?? 0;
    return bind(config);
  };

  const session = new Session();
  session.connect();
  const post = (method, params) =>
    new Promise((resolve, reject) => session.post(method, params, (err, result) => (err ? reject(err) : resolve(result))));
  let open = false;
  process.on('SIGUSR2', async () => {
    if (!open) {
      open = true;
      counts.binds = counts.values = 0;
      await post('HeapProfiler.enable');
      await post('HeapProfiler.startSampling', {
        samplingInterval: Number(process.env.ALLOC_SAMPLE_INTERVAL ?? 4096),
        includeObjectsCollectedByMajorGC: true,
        includeObjectsCollectedByMinorGC: true,
      });
      return;
    }
    open = false;
    const { profile } = await post('HeapProfiler.stopSampling');
    writeFileSync(`${file}.tmp`, JSON.stringify({ profile, ...counts }));
    renameSync(`${file}.tmp`, file);
  });
}
