// Which user-given URLs and which addresses we may connect to (bad-inputs catalogue, group G).
// Syntax is decided here without I/O; the address check is shared with the connect-time guard
// in safe-fetch.ts, which is the one that actually holds: names are only known at connect.
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

type Addr = ipaddr.IPv4 | ipaddr.IPv6;

export interface AddressPolicy {
  /** Lets configuration permit non-public targets (tests: 127.0.0.2; development: private ranges).
   *  Never consulted for unspecified, multicast, broadcast or cloud-metadata addresses. */
  allowPrivate?: (ip: string) => boolean;
}

export interface UrlPolicy extends AddressPolicy {
  /** Production: refuse `http:`. */
  httpsOnly?: boolean;
  /** Ports allowed besides 80 and 443. */
  /** Ports allowed besides 80 and 443; `'any'` in development, where local receivers use random ports. */
  allowedPorts?: number[] | 'any';
}

export type UrlCheck = { ok: true; url: URL } | { ok: false; status: 400 | 422; reason: string };

export const MAX_URL_LENGTH = 2048;

// Control characters (C0, DEL, C1) are refused on the raw string: the WHATWG parser silently
// strips tabs and newlines, so `new URL()` alone would hide a header-injection attempt.
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

// Metadata endpoints stay refused even when configuration allows private targets: a developer
// allowing "all private" on a cloud VM must not expose instance credentials.
const METADATA = new Set(['169.254.169.254', '100.100.100.200', '192.0.0.192', 'fd00:ec2::254']);
// Never a sensible destination; 0.0.0.0 even reaches the local host on Linux.
const NEVER = new Set(['unspecified', 'multicast', 'broadcast']);

const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR('2000::/3');
const NAT64_WELL_KNOWN = ipaddr.parseCIDR('64:ff9b::/96');

const v4 = (hi: number, lo: number): ipaddr.IPv4 => new ipaddr.IPv4([hi >> 8, hi & 255, lo >> 8, lo & 255]);

/** IPv4 addresses carried inside IPv6 forms that translate or tunnel to them. */
function embeddedV4(a: ipaddr.IPv6): ipaddr.IPv4[] {
  const p = a.parts;
  switch (a.range()) {
    case 'rfc6052': // NAT64; only the /96 well-known prefix keeps the address in the last 32 bits
    case 'rfc6145': // SIIT IPv4-translated
      return [v4(p[6], p[7])];
    case '6to4':
      return [v4(p[1], p[2])];
    case 'teredo': // server, then the client address, which Teredo stores inverted
      return [v4(p[2], p[3]), v4(p[6] ^ 0xffff, p[7] ^ 0xffff)];
    default:
      // IPv4-compatible ::a.b.c.d (deprecated); ipaddr.js calls it unicast
      return p.slice(0, 6).every((x) => x === 0) && (p[6] !== 0 || p[7] > 1) ? [v4(p[6], p[7])] : [];
  }
}

function isPublic(a: Addr): boolean {
  if (a.kind() === 'ipv4') return a.range() === 'unicast';
  const a6 = a as ipaddr.IPv6;
  const range = a6.range();
  // ipaddr.js calls these unicast (or names them) although they lead to an IPv4 address: decode it.
  if (range === 'rfc6052') return a6.match(NAT64_WELL_KNOWN) && embeddedV4(a6).every(isPublic);
  if (range === '6to4' || range === 'teredo') return embeddedV4(a6).every(isPublic);
  // Outside 2000::/3 nothing is global, including the IPv4-compatible and site-local forms.
  return range === 'unicast' && a6.match(GLOBAL_UNICAST_V6);
}

const isNever = (a: Addr): boolean => NEVER.has(a.range()) || METADATA.has(a.toString());

/** True when we may connect to `ip` (a plain IPv4 or IPv6 address, no brackets). */
export function isAllowedAddress(ip: string, policy: AddressPolicy = {}): boolean {
  if (!isIP(ip)) return false;
  let addr: Addr;
  try {
    addr = ipaddr.parse(ip);
  } catch {
    return false;
  }
  // A mapped address is the IPv4 destination itself on a dual-stack socket.
  if (addr.kind() === 'ipv6' && (addr as ipaddr.IPv6).isIPv4MappedAddress()) addr = (addr as ipaddr.IPv6).toIPv4Address();
  if (isNever(addr)) return false;
  if (addr.kind() === 'ipv6' && embeddedV4(addr as ipaddr.IPv6).some(isNever)) return false;
  if (isPublic(addr)) return true;
  return policy.allowPrivate?.(addr.toString()) === true;
}

/** A policy predicate allowing the given CIDR ranges, e.g. `allowCidrs('127.0.0.0/8')` in tests. */
export function allowCidrs(...cidrs: string[]): (ip: string) => boolean {
  const ranges = cidrs.map((c) => ipaddr.parseCIDR(c));
  return (ip) => {
    const a = ipaddr.process(ip);
    return ranges.some((r) => r[0].kind() === a.kind() && a.match(r));
  };
}

/** `localhost` names never reach DNS (RFC 6761): treat them as the loopback addresses. */
export function isLocalhostName(hostname: string): boolean {
  const h = hostname.replace(/\.$/, '').toLowerCase();
  return h === 'localhost' || h.endsWith('.localhost');
}

/** Decides a URL before any I/O. 400: not a URL we can fetch at all; 422: refused by policy. */
export function checkUrlSyntax(raw: string, options: UrlPolicy = {}): UrlCheck {
  const bad = (reason: string): UrlCheck => ({ ok: false, status: 400, reason });
  const unsafe = (reason: string): UrlCheck => ({ ok: false, status: 422, reason });

  if (typeof raw !== 'string' || raw.length === 0) return bad('URL is empty');
  if (raw.length > MAX_URL_LENGTH) return bad(`URL is longer than ${MAX_URL_LENGTH} characters`);
  if (CONTROL.test(raw)) return bad('URL contains control characters');
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return bad('not a valid absolute URL'); // includes ports above 65535
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return bad(`scheme ${url.protocol} is not allowed`);
  if (url.port === '0') return bad('port 0 is not valid');
  if (options.httpsOnly && url.protocol !== 'https:') return unsafe('only https URLs are allowed');
  if (url.username || url.password) return unsafe('credentials in the URL are not allowed');
  const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80));
  if (options.allowedPorts !== 'any' && ![80, 443, ...(options.allowedPorts ?? [])].includes(port)) return unsafe(`port ${port} is not allowed`);

  // The parser has already turned 2130706433, 0x7f.1, full-width digits, 。 and %-escapes into
  // canonical hostnames, so an IP literal here is exactly the address Node would connect to.
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  if (isIP(host)) {
    if (!isAllowedAddress(host, options)) return unsafe('the address is not allowed');
  } else if (isLocalhostName(host)) {
    if (!isAllowedAddress('127.0.0.1', options) || !isAllowedAddress('::1', options)) return unsafe('the address is not allowed');
  }
  return { ok: true, url };
}
