import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { BlockList, isIP } from 'node:net';
import type { Environment } from '../../core/context.js';
import { AppError } from '../../core/errors.js';

/**
 * Server-side request forgery guard. Endpoints must be public URLs: no loopback, private,
 * link-local, CGNAT, multicast or reserved addresses, neither as a literal at registration nor as
 * what the name resolves to at delivery time (checked on the very address the socket connects to,
 * so a DNS answer cannot change between check and connect). Anyone who signs up gets sandbox
 * keys, so the sandbox keeps to the same addresses as live; it differs in allowing plain http
 * and, when the operator allows it on a loopback-only development server
 * (`webhookLoopbackAllowed`), this machine's loopback. Live also needs https.
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
  // IPv4-compatible (::a.b.c.d, deprecated) holds :: and ::1 and any IPv4 address in disguise.
  ['::', 96],
  ['::1', 128],
  ['2002::', 16],
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

const LOOPBACK = new BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.addAddress('::1', 'ipv6');

/** What an environment's endpoints may reach beyond public addresses. */
export interface UrlRules {
  /** Sandbox endpoints may point at loopback (`webhookLoopbackAllowed`). */
  allowLoopback: boolean;
}

function inList(list: BlockList, address: string): boolean {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return inList(list, mapped[1] as string);
  const family = isIP(address);
  if (family === 4) return list.check(address, 'ipv4');
  if (family === 6) return list.check(address, 'ipv6'); // also matches IPv4-mapped forms
  return true;
}

/** True for addresses that are not public: no webhook reaches them (but loopback, see refusedIn). */
export const isBlockedAddress = (address: string) => inList(BLOCKED, address);
/** True for link-local addresses (cloud metadata services). */
export const isLinkLocal = (address: string) => inList(LINK_LOCAL, address);
/** True for this machine's loopback, IPv4-mapped forms included. */
export const isLoopback = (address: string) => isIP(address) !== 0 && inList(LOOPBACK, address);

const loopbackAllowed = (environment: Environment, rules: UrlRules) => environment === 'sandbox' && rules.allowLoopback;

/** The address check of an environment. */
export function refusedIn(environment: Environment, rules: UrlRules): (address: string) => boolean {
  if (!loopbackAllowed(environment, rules)) return isBlockedAddress;
  return (address) => isBlockedAddress(address) && !isLoopback(address);
}

const MAX_URL_LENGTH = 2048;

function invalidUrl(message: string): AppError {
  return new AppError('validation_failed', message, [{ field: 'url', code: 'invalid', message }]);
}

const LOCAL_NAME = /(?:^|\.)(?:localhost|local|internal|localdomain|home\.arpa)$/;

/**
 * Registration-time check of an endpoint URL for its environment (400 validation_failed), and
 * again before every delivery (the rules may have changed since).
 */
export function assertEndpointUrl(raw: string, environment: Environment, rules: UrlRules): URL {
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
  // The URL parser has already turned 127.1, 2130706433 and 0x7f000001 into 127.0.0.1.
  const host = url.hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (environment === 'live' && url.protocol !== 'https:')
    throw invalidUrl('Live endpoints must use https (http is allowed in sandbox only)');
  if (host.endsWith('.')) throw invalidUrl('The host name must not end with a dot');
  if (isIP(host)) {
    if (isLinkLocal(host)) throw invalidUrl('The URL must not point at a link-local address');
    if (refusedIn(environment, rules)(host))
      throw invalidUrl('The URL must not point at a private, loopback, link-local or reserved address');
    return url;
  }
  const loopbackName = host === 'localhost' || host.endsWith('.localhost');
  if (loopbackName && loopbackAllowed(environment, rules)) return url;
  if (LOCAL_NAME.test(host)) throw invalidUrl('The URL must not point at a local host name');
  if (!host.includes('.')) throw invalidUrl('The URL needs a fully qualified host name');
  return url;
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;
export type Resolver = (hostname: string) => Promise<LookupAddress[]>;

export const systemResolver: Resolver = (hostname) =>
  new Promise((resolve, reject) => dnsLookup(hostname, { all: true }, (err, addresses) => (err ? reject(err) : resolve(addresses))));

/**
 * A `lookup` for node:http that refuses a name when any of its addresses is refused in the
 * environment. It is what the socket connects with, so the checked address is the connected one.
 * `onResolved` sees every answer (the caller learns whether the target was public).
 */
export function guardedLookup(
  resolver: Resolver,
  environment: Environment,
  rules: UrlRules,
  onResolved?: (addresses: LookupAddress[]) => void,
) {
  const refused = refusedIn(environment, rules);
  return (hostname: string, options: { all?: boolean }, callback: LookupCallback) => {
    resolver(hostname).then(
      (addresses) => {
        onResolved?.(addresses);
        const bad = addresses.find((a) => refused(a.address));
        if (addresses.length === 0 || bad) {
          const what = bad && isLinkLocal(bad.address) ? 'a link-local' : 'a private, loopback or link-local';
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
