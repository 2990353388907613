import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile, rename, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type SftpClient from 'ssh2-sftp-client';
import { AppError } from '../../core/errors.js';
import { fileTooLarge, transportFailed } from './errors.js';
import { MAX_FILE_BYTES } from './xml.js';
import type { ConnectionRow, TransportConfig } from './repo.js';

/**
 * How files reach the bank and come back: a local outbox/inbox folder (a bank's own client
 * software, or a mounted share, moves them) or SFTP host-to-host with key authentication.
 * A file is written under a temporary name and renamed, so the other side never reads half a
 * file; an inbound file read is moved to `processed/` (or `rejected/`) beside it.
 */
export interface Transport {
  deliver(filename: string, content: string): Promise<void>;
  /** Names of the files waiting in the inbox. */
  inbox(): Promise<string[]>;
  read(name: string): Promise<Buffer>;
  archive(name: string, outcome: 'processed' | 'rejected'): Promise<void>;
  close(): Promise<void>;
}

const isXmlName = (name: string) => /^[\w.-]+\.xml$/i.test(name);

class FolderTransport implements Transport {
  constructor(private readonly config: TransportConfig) {}

  async deliver(filename: string, content: string) {
    const dir = this.config.outbox!;
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, `.${filename}.part`), content);
    await rename(join(dir, `.${filename}.part`), join(dir, filename));
  }

  async inbox() {
    const dir = this.config.inbox!;
    await mkdir(dir, { recursive: true });
    return (await readdir(dir)).filter(isXmlName).sort();
  }

  async read(name: string) {
    const path = join(this.config.inbox!, name);
    if ((await stat(path)).size > MAX_FILE_BYTES) throw fileTooLarge(name, MAX_FILE_BYTES);
    return readFile(path);
  }

  async archive(name: string, outcome: 'processed' | 'rejected') {
    const dir = join(this.config.inbox!, outcome);
    await mkdir(dir, { recursive: true });
    await rename(join(this.config.inbox!, name), join(dir, name));
  }

  async close() {}
}

/** The SHA256 fingerprint of a host key, as `ssh-keygen -lf` prints it. */
export function hostKeyFingerprint(key: Buffer): string {
  return `SHA256:${createHash('sha256').update(key).digest('base64').replace(/=+$/, '')}`;
}

class SftpTransport implements Transport {
  private client: SftpClient | undefined;
  constructor(private readonly config: TransportConfig) {}

  private async open(): Promise<SftpClient> {
    if (this.client) return this.client;
    const c = this.config;
    // Loaded on first use: ssh2 keeps a WebAssembly memory in every process that imports it, and
    // most API processes never open an SFTP connection (docs/benchmarks.md, start-up memory).
    const { default: Sftp } = await import('ssh2-sftp-client');
    const client = new Sftp('bank');
    const privateKey = await readFile(c.private_key_path!);
    await client.connect({
      host: c.host!,
      port: c.port ?? 22,
      username: c.username!,
      privateKey,
      readyTimeout: 15_000,
      // A bank's host key is pinned: a server that is not the bank never receives a file.
      hostVerifier: (key: Buffer) => !c.host_key_sha256 || hostKeyFingerprint(key) === c.host_key_sha256,
    } as SftpClient.ConnectOptions);
    this.client = client;
    return client;
  }

  async deliver(filename: string, content: string) {
    const client = await this.open();
    const dir = this.config.remote_outbox ?? 'outbox';
    if (!(await client.exists(dir))) await client.mkdir(dir, true);
    await client.put(Buffer.from(content), `${dir}/.${filename}.part`);
    await client.rename(`${dir}/.${filename}.part`, `${dir}/${filename}`);
  }

  async inbox() {
    const client = await this.open();
    const dir = this.config.remote_inbox ?? 'inbox';
    if (!(await client.exists(dir))) return [];
    return (await client.list(dir))
      .filter((f) => f.type === '-' && isXmlName(f.name))
      .map((f) => f.name)
      .sort();
  }

  async read(name: string) {
    const client = await this.open();
    const path = `${this.config.remote_inbox ?? 'inbox'}/${name}`;
    const info = await client.stat(path);
    if (info.size > MAX_FILE_BYTES) throw fileTooLarge(name, MAX_FILE_BYTES);
    return (await client.get(path)) as Buffer;
  }

  async archive(name: string, outcome: 'processed' | 'rejected') {
    const client = await this.open();
    const dir = this.config.remote_inbox ?? 'inbox';
    if (!(await client.exists(`${dir}/${outcome}`))) await client.mkdir(`${dir}/${outcome}`, true);
    await client.rename(`${dir}/${name}`, `${dir}/${outcome}/${name}`);
  }

  async close() {
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => undefined);
  }
}

/**
 * The connection's transport. A failure to reach the bank (a refused connection, a key the server
 * does not take, a missing folder) is the operator's 503 naming the transport, never a 500.
 */
export function transportOf(connection: Pick<ConnectionRow, 'transport' | 'transport_config'>): Transport {
  const inner =
    connection.transport === 'sftp' ? new SftpTransport(connection.transport_config) : new FolderTransport(connection.transport_config);
  const guarded =
    <A extends unknown[], R>(what: string, fn: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      try {
        return await fn(...args);
      } catch (err) {
        if (err instanceof AppError) throw err;
        const reason = err instanceof Error ? err.message : String(err);
        throw transportFailed(connection.transport, what, reason);
      }
    };
  return {
    deliver: guarded('deliver a file', (name: string, content: string) => inner.deliver(name, content)),
    inbox: guarded('list the inbox', () => inner.inbox()),
    read: guarded('read a file', (name: string) => inner.read(name)),
    archive: guarded('archive a file', (name: string, outcome: 'processed' | 'rejected') => inner.archive(name, outcome)),
    close: () => inner.close(),
  };
}
