import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { BlockList, isIP } from 'node:net';
import type { Environment } from '../../core/context.js';
import { AppError } from '../../core/errors.js';

/**
 * Server-side request forgery guard. Live endpoints must be public HTTPS URLs: no loopback,
 * private, link-local, CGNAT, multicast or reserved addresses, neither as a literal at
 * registration nor as what the name resolves to at delivery time (checked on the very address
 * the socket connects to, so a DNS answer cannot change between check and connect).
 * The sandbox allows http, loopback and private networks so a developer can point it at their
 * laptop or a container next to the server, but never link-local addresses: that is where cloud
 * metadata services live (169.254.169.254), and no webhook receiver does.
 */
const BLOCKED = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  BLOCKED.addSubnet(net, prefix, 'ipv4');
}
for (const [net, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
  ['64:ff9b::', 96],
  ['2001:db8::', 32],
] as const) {
  BLOCKED.addSubnet(net, prefix, 'ipv6');
}

const LINK_LOCAL = new BlockList();
LINK_LOCAL.addSubnet('169.254.0.0', 16, 'ipv4');
LINK_LOCAL.addSubnet('fe80::', 10, 'ipv6');

function inList(list: BlockList, address: string): boolean {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return inList(list, mapped[1] as string);
  const family = isIP(address);
  if (family === 4) return list.check(address, 'ipv4');
  if (family === 6) return list.check(address, 'ipv6'); // also matches IPv4-mapped forms
  return true;
}

/** True for addresses a live webhook may not reach. */
export const isBlockedAddress = (address: string) => inList(BLOCKED, address);
/** True for addresses no webhook may reach, sandbox included. */
export const isLinkLocal = (address: string) => inList(LINK_LOCAL, address);

/** The address check of an environment. */
export const refusedIn = (environment: Environment) => (environment === 'live' ? isBlockedAddress : isLinkLocal);

const MAX_URL_LENGTH = 2048;

function invalidUrl(message: string): AppError {
  return new AppError('validation_failed', message, [{ field: 'url', code: 'invalid', message }]);
}

/** Registration-time check of an endpoint URL for its environment (400 validation_failed). */
export function assertEndpointUrl(raw: string, environment: Environment): URL {
  if (raw.length > MAX_URL_LENGTH) throw invalidUrl(`The URL must be at most ${MAX_URL_LENGTH} characters`);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw invalidUrl('The URL is not a valid absolute URL');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw invalidUrl('The URL must use https');
  if (url.username || url.password) throw invalidUrl('The URL must not contain credentials');
  if (url.hash) throw invalidUrl('The URL must not contain a fragment');
  const host = url.hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (isIP(host) && isLinkLocal(host)) throw invalidUrl('The URL must not point at a link-local address');
  if (environment === 'sandbox') return url;
  if (url.protocol !== 'https:') throw invalidUrl('Live endpoints must use https (http is allowed in sandbox only)');
  if (host === 'localhost' || host.endsWith('.localhost') || host.endsWith('.local') || host.endsWith('.internal')) {
    throw invalidUrl('Live endpoints must not point at a local host name (allowed in sandbox only)');
  }
  if (isIP(host) && isBlockedAddress(host)) {
    throw invalidUrl('Live endpoints must not point at a private, loopback or link-local address (allowed in sandbox only)');
  }
  if (!host.includes('.') && !isIP(host)) throw invalidUrl('Live endpoints need a fully qualified host name');
  return url;
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;
export type Resolver = (hostname: string) => Promise<LookupAddress[]>;

export const systemResolver: Resolver = (hostname) =>
  new Promise((resolve, reject) => dnsLookup(hostname, { all: true }, (err, addresses) => (err ? reject(err) : resolve(addresses))));

/**
 * A `lookup` for node:http that refuses a name when any of its addresses is refused in the
 * environment. It is what the socket connects with, so the checked address is the connected one.
 */
export function guardedLookup(resolver: Resolver, environment: Environment) {
  const refused = refusedIn(environment);
  return (hostname: string, options: { all?: boolean }, callback: LookupCallback) => {
    resolver(hostname).then(
      (addresses) => {
        const bad = addresses.find((a) => refused(a.address));
        if (addresses.length === 0 || bad) {
          const what = environment === 'live' ? 'a private, loopback or link-local' : 'a link-local';
          const err: NodeJS.ErrnoException = new Error(`refused: ${hostname} resolves to ${what} address`);
          err.code = 'EBLOCKEDADDRESS';
          callback(err, []);
          return;
        }
        if (options.all) callback(null, addresses);
        else callback(null, addresses[0]!.address, addresses[0]!.family);
      },
      (err: NodeJS.ErrnoException) => callback(err, []),
    );
  };
}
