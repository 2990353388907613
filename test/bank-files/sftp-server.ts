import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../server-process.js';

export const SSHD = '/usr/sbin/sshd';

/** Is Debian's OpenSSH server installed (.ci/run installs openssh-server)? */
export const hasSshd = () => existsSync(SSHD) && existsSync('/usr/bin/ssh-keygen');

/**
 * A real OpenSSH server on a loopback port for one test: its own sshd_config, host key and the
 * client's authorized key in a temporary folder, logging in as the current user with that key
 * only, SFTP by sshd's internal-sftp. The bank's side of the exchange is `root`/outbox and
 * `root`/inbox (absolute paths: the session starts in the user's home).
 */
export async function startSftpServer() {
  const dir = mkdtempSync(join(tmpdir(), 'bank-sftp-'));
  const root = join(dir, 'bank');
  mkdirSync(join(root, 'outbox'), { recursive: true });
  mkdirSync(join(root, 'inbox'), { recursive: true });
  const keygen = (file: string) => execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', file], { stdio: 'pipe' });
  keygen(join(dir, 'host_key'));
  keygen(join(dir, 'client_key'));
  writeFileSync(join(dir, 'authorized_keys'), readFileSync(join(dir, 'client_key.pub')), { mode: 0o600 });
  const fingerprint = execFileSync('ssh-keygen', ['-l', '-E', 'sha256', '-f', join(dir, 'host_key.pub')], { encoding: 'utf8' }).split(
    ' ',
  )[1]!;
  const port = await freePort();
  const user = userInfo().username;
  writeFileSync(
    join(dir, 'sshd_config'),
    [
      `Port ${port}`,
      'ListenAddress 127.0.0.1',
      `HostKey ${join(dir, 'host_key')}`,
      `PidFile ${join(dir, 'sshd.pid')}`,
      `AuthorizedKeysFile ${join(dir, 'authorized_keys')}`,
      'PubkeyAuthentication yes',
      'PasswordAuthentication no',
      'KbdInteractiveAuthentication no',
      'PermitRootLogin prohibit-password',
      'UsePAM no',
      'StrictModes no',
      `AllowUsers ${user}`,
      'Subsystem sftp internal-sftp',
      'LogLevel ERROR',
      '',
    ].join('\n'),
  );
  // Run as root, sshd wants its privilege separation folder.
  if (process.getuid?.() === 0) mkdirSync('/run/sshd', { recursive: true, mode: 0o755 });
  const proc: ChildProcess = spawn(SSHD, ['-D', '-e', '-f', join(dir, 'sshd_config')], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  proc.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  for (let i = 0; ; i++) {
    if (proc.exitCode !== null) throw new Error(`sshd exited: ${stderr}`);
    const up = await new Promise<boolean>((resolve) => {
      const s = createConnection({ host: '127.0.0.1', port }, () => {
        s.destroy();
        resolve(true);
      });
      s.on('error', () => resolve(false));
    });
    if (up) break;
    if (i > 100) throw new Error(`sshd did not listen: ${stderr}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    port,
    user,
    root,
    outbox: join(root, 'outbox'),
    inbox: join(root, 'inbox'),
    privateKeyPath: join(dir, 'client_key'),
    fingerprint,
    async stop() {
      proc.kill('SIGTERM');
      await new Promise((r) => (proc.exitCode !== null ? r(null) : proc.once('exit', r)));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
