import { randomBytes } from 'node:crypto';
import { linkSync, readFileSync, renameSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';

/**
 * An exclusive lock on the embedded database's data directory. PGlite is one process per data
 * directory: two processes writing the same files lose each other's writes (and corrupt the
 * database). The lock is a file next to the directory holding the owner's PID, its start time
 * and its host; it is created atomically (O_EXCL). A lock whose process is gone (kill -9, a
 * crash, a reboot) is stale and taken over; a live one makes the second process fail with an
 * error naming the holder.
 */
export interface LockHolder {
  pid: number;
  host: string;
  /** Kernel start time of the process (Linux /proc), to tell a reused PID from the holder. */
  start: string | null;
  command: string;
  since: string;
  token: string;
}

export class DataDirLocked extends Error {
  constructor(
    readonly dataDir: string,
    readonly holder: LockHolder,
  ) {
    super(
      `The embedded database in ${dataDir} is in use by process ${holder.pid}` +
        `${holder.host !== hostname() ? ` on ${holder.host}` : ''} (${holder.command}, since ${holder.since}). ` +
        'Only one process at a time can open it: stop that process first, or use PostgreSQL (DATABASE_URL) to run several.',
    );
    this.name = 'DataDirLocked';
  }
}

function processStart(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Field 22 (starttime); the command name (field 2) may hold spaces, so count after its ')'.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
  } catch {
    return null;
  }
}

function isAlive(holder: LockHolder): boolean {
  if (holder.host !== hostname()) return true; // another machine: we cannot tell, so assume it runs
  try {
    process.kill(holder.pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ESRCH') return false;
  }
  const start = processStart(holder.pid);
  // The PID lives; it is the holder unless its start time shows it was reused by another process.
  return !(start !== null && holder.start !== null && start !== holder.start);
}

function readHolder(file: string): LockHolder | 'unreadable' | 'missing' {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'missing' : 'unreadable';
  }
  try {
    const holder = JSON.parse(text) as LockHolder;
    return typeof holder.pid === 'number' && typeof holder.token === 'string' ? holder : 'unreadable';
  } catch {
    return 'unreadable';
  }
}

export interface DataDirLock {
  file: string;
  release(): void;
}

export function lockDataDir(dataDir: string): DataDirLock {
  const file = `${dataDir}.lock`;
  const me: LockHolder = {
    pid: process.pid,
    host: hostname(),
    start: processStart(process.pid),
    command: process.argv.slice(1, 3).join(' ').slice(0, 200) || 'node',
    since: new Date().toISOString(),
    token: randomBytes(12).toString('hex'),
  };
  for (let attempt = 0; ; attempt++) {
    try {
      writeFileSync(file, `${JSON.stringify(me)}\n`, { flag: 'wx', mode: 0o644 });
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || attempt > 20) throw err;
    }
    const holder = readHolder(file);
    if (holder === 'missing') continue;
    if (holder === 'unreadable') {
      // Being written this very moment by its owner, or left half-written by a crash long ago.
      const age = Date.now() - statSync(file, { throwIfNoEntry: false })!.mtimeMs;
      if (age < 2000) {
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 50);
        continue;
      }
    } else if (isAlive(holder)) {
      throw new DataDirLocked(dataDir, holder);
    }
    // Stale: move it aside (atomic), and make sure what we moved is the stale lock we judged.
    const aside = `${file}.stale-${me.token}`;
    try {
      renameSync(file, aside);
    } catch {
      continue;
    }
    const moved = readHolder(aside);
    if (holder !== 'unreadable' && moved !== 'unreadable' && moved !== 'missing' && moved.token !== holder.token) {
      try {
        linkSync(aside, file); // a live process's fresh lock: put it back
      } catch {
        /* someone else already holds the path: they will be judged on the next attempt */
      }
    }
    try {
      unlinkSync(aside);
    } catch {
      /* already gone */
    }
  }

  const release = () => {
    const holder = readHolder(file);
    if (typeof holder === 'object' && holder.token === me.token) {
      try {
        unlinkSync(file);
      } catch {
        /* already gone */
      }
    }
    process.off('exit', release);
  };
  // A process that ends without closing the database (process.exit) still frees the directory.
  process.on('exit', release);
  return { file, release };
}
