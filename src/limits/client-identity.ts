/**
 * Who a request comes from, for rate limiting: the socket's peer, or, when the peer is a
 * trusted proxy (a load balancer), the right-most X-Forwarded-For address that is not itself
 * a trusted proxy. Entries left of that one were written by the client and are ignored, so a
 * spoofed X-Forwarded-For changes nothing. Pure: strings in, a client name out.
 *
 * Addresses are compared as 16 bytes: IPv4 as IPv4-mapped IPv6 (::ffff:a.b.c.d), which is also
 * how Node reports IPv4 peers on a dual-stack socket, so one CIDR covers both spellings.
 */

/** An address as 16 bytes (IPv4 mapped into ::ffff:0:0/96). */
export type Address = Uint8Array;

export interface Cidr {
  bytes: Address;
  /** Prefix length in bits over the 16 bytes (an IPv4 /24 is 96 + 24). */
  bits: number;
}

const MAPPED_PREFIX = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff];

function parseIpv4(text: string): number[] | undefined {
  const parts = text.split('.');
  if (parts.length !== 4) return undefined;
  const bytes: number[] = [];
  for (const part of parts) {
    if (!/^\d{1,3}$/.test(part)) return undefined;
    const value = Number(part);
    if (value > 255) return undefined;
    bytes.push(value);
  }
  return bytes;
}

function parseGroups(text: string, allowIpv4Tail: boolean): number[] | undefined {
  if (text === '') return [];
  const groups = text.split(':');
  const bytes: number[] = [];
  for (const [index, group] of groups.entries()) {
    if (allowIpv4Tail && index === groups.length - 1 && group.includes('.')) {
      const v4 = parseIpv4(group);
      if (!v4) return undefined;
      bytes.push(...v4);
    } else {
      if (!/^[0-9a-fA-F]{1,4}$/.test(group)) return undefined;
      const value = parseInt(group, 16);
      bytes.push(value >> 8, value & 0xff);
    }
  }
  return bytes;
}

function parseIpv6(text: string): number[] | undefined {
  const zone = text.indexOf('%');
  const bare = zone >= 0 ? text.slice(0, zone) : text;
  const halves = bare.split('::');
  if (halves.length > 2) return undefined;
  const head = parseGroups(halves[0] ?? '', halves.length === 1);
  const tail = halves.length === 2 ? parseGroups(halves[1] ?? '', true) : [];
  if (!head || !tail) return undefined;
  if (halves.length === 1) return head.length === 16 ? head : undefined;
  const fill = 16 - head.length - tail.length;
  // "::" stands for at least one group of zeros.
  if (fill < 2) return undefined;
  return [...head, ...new Array<number>(fill).fill(0), ...tail];
}

/** A bare IPv4 or IPv6 address (no port, no brackets), or undefined. */
export function parseAddress(text: string): Address | undefined {
  const v4 = parseIpv4(text);
  if (v4) return Uint8Array.from([...MAPPED_PREFIX, ...v4]);
  if (!text.includes(':')) return undefined;
  const v6 = parseIpv6(text);
  return v6 ? Uint8Array.from(v6) : undefined;
}

/**
 * One X-Forwarded-For entry as proxies write it: an address, `[v6]`, `[v6]:port` or
 * `v4:port`, with optional spaces around it.
 */
export function parseForwardedEntry(entry: string): Address | undefined {
  const text = entry.trim();
  if (text.startsWith('[')) {
    const end = text.indexOf(']');
    if (end < 0) return undefined;
    const rest = text.slice(end + 1);
    if (rest !== '' && !/^:\d{1,5}$/.test(rest)) return undefined;
    return parseAddress(text.slice(1, end));
  }
  const v4WithPort = /^(\d{1,3}(?:\.\d{1,3}){3}):\d{1,5}$/.exec(text);
  return parseAddress(v4WithPort ? (v4WithPort[1] as string) : text);
}

/** `a.b.c.d/n`, `v6/n`, or a bare address (a single host). */
export function parseCidr(text: string): Cidr | undefined {
  const slash = text.indexOf('/');
  const addressText = slash < 0 ? text : text.slice(0, slash);
  const bytes = parseAddress(addressText);
  if (!bytes) return undefined;
  const isV4 = parseIpv4(addressText) !== undefined;
  const max = isV4 ? 32 : 128;
  let length = max;
  if (slash >= 0) {
    const lengthText = text.slice(slash + 1);
    if (!/^\d{1,3}$/.test(lengthText)) return undefined;
    length = Number(lengthText);
    if (length > max) return undefined;
  }
  return { bytes, bits: isV4 ? 96 + length : length };
}

export function cidrContains(cidr: Cidr, address: Address): boolean {
  const whole = cidr.bits >> 3;
  for (let i = 0; i < whole; i++) if (cidr.bytes[i] !== address[i]) return false;
  const rest = cidr.bits & 7;
  if (rest === 0) return true;
  const mask = (0xff << (8 - rest)) & 0xff;
  return ((cidr.bytes[whole] as number) & mask) === ((address[whole] as number) & mask);
}

const isMapped = (address: Address): boolean => MAPPED_PREFIX.every((byte, i) => address[i] === byte);

/**
 * The name a budget is kept under. IPv4: the address. IPv6: its /64, because one subscriber
 * usually holds a whole /64 and could otherwise spread a flood over 2^64 addresses.
 */
export function clientName(address: Address): string {
  if (isMapped(address)) return `${address[12]}.${address[13]}.${address[14]}.${address[15]}`;
  const groups: string[] = [];
  for (let i = 0; i < 8; i += 2) groups.push((((address[i] as number) << 8) | (address[i + 1] as number)).toString(16));
  return `${groups.join(':')}::/64`;
}

export class TrustedProxies {
  private readonly cidrs: readonly Cidr[];

  constructor(cidrs: readonly string[]) {
    this.cidrs = cidrs.map((text) => {
      const cidr = parseCidr(text);
      if (!cidr) throw new Error(`not a CIDR: ${text}`);
      return cidr;
    });
  }

  get isEmpty(): boolean {
    return this.cidrs.length === 0;
  }

  has(address: Address): boolean {
    return this.cidrs.some((cidr) => cidrContains(cidr, address));
  }
}

/**
 * The client's name for its budget. `peer` is the socket's remote address; `forwardedFor`
 * the X-Forwarded-For header (Node joins repeated headers with ", "). Walking from the right,
 * each entry was written by the hop after it; the first one that is not a trusted proxy is the
 * client. An entry that does not parse stops the walk at the last trusted hop, which is then
 * the client (a trusted proxy wrote nonsense; its own address is all that is known).
 */
export function clientOf(peer: string | undefined, forwardedFor: string | undefined, trusted: TrustedProxies): string {
  const peerAddress = peer === undefined ? undefined : parseAddress(peer);
  if (!peerAddress) return `unparsed:${peer ?? ''}`;
  if (forwardedFor === undefined || trusted.isEmpty || !trusted.has(peerAddress)) return clientName(peerAddress);
  let nearest = peerAddress;
  const entries = forwardedFor.split(',');
  for (let i = entries.length - 1; i >= 0; i--) {
    const address = parseForwardedEntry(entries[i] as string);
    if (!address) return clientName(nearest);
    if (!trusted.has(address)) return clientName(address);
    nearest = address;
  }
  // Every hop is a trusted proxy: the left-most is the nearest thing to a client.
  return clientName(nearest);
}
