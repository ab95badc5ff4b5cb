import { BlockList, isIP } from 'node:net';

/**
 * Addresses a webhook POST never reaches unless the operator allows them: this host, private
 * networks, link-local (the cloud metadata endpoint 169.254.169.254 and its IPv6 forms), carrier
 * NAT, multicast, reserved and documentation ranges. A tenant's URL could otherwise make the
 * service probe the deployment's own network (server-side request forgery).
 */
const REFUSED_V4 = [
  '0.0.0.0/8',
  '10.0.0.0/8',
  '100.64.0.0/10',
  '127.0.0.0/8',
  '169.254.0.0/16',
  '172.16.0.0/12',
  '192.0.0.0/24',
  '192.0.2.0/24',
  '192.88.99.0/24',
  '192.168.0.0/16',
  '198.18.0.0/15',
  '198.51.100.0/24',
  '203.0.113.0/24',
  '224.0.0.0/4',
  '240.0.0.0/4',
];
const REFUSED_V6 = [
  '::/128',
  '::1/128',
  '64:ff9b::/96',
  '64:ff9b:1::/48',
  '100::/64',
  '2001::/23',
  '2001:db8::/32',
  '2002::/16',
  'fc00::/7',
  'fe80::/10',
  'fec0::/10',
  'ff00::/8',
];

function subnets(list: BlockList, cidrs: readonly string[], family: 'ipv4' | 'ipv6'): void {
  for (const cidr of cidrs) {
    const [network, prefix] = cidr.split('/') as [string, string];
    list.addSubnet(network, Number(prefix), family);
  }
}

const REFUSED = new BlockList();
subnets(REFUSED, REFUSED_V4, 'ipv4');
subnets(REFUSED, REFUSED_V6, 'ipv6');

/** The IPv4 address an IPv4-mapped or -compatible IPv6 address stands for (`::ffff:10.0.0.1`), if it is one. */
function embeddedV4(address: string): string | undefined {
  const match = /^::(?:ffff:)?(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(address);
  if (match) return match[1];
  const hex = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(address);
  if (!hex) return undefined;
  const high = Number.parseInt(hex[1]!, 16);
  const low = Number.parseInt(hex[2]!, 16);
  return [high >> 8, high & 0xff, low >> 8, low & 0xff].join('.');
}

/** Where webhook POSTs may go: every public address, and the private ones the operator allows. */
export class AddressPolicy {
  readonly #allowed: BlockList;
  /** The operator's allowed networks, as given (for messages). */
  readonly allowed: readonly string[];

  private constructor(allowed: BlockList, networks: readonly string[]) {
    this.#allowed = allowed;
    this.allowed = networks;
  }

  /**
   * From FLOTILLA_WEBHOOK_ALLOWED_NETWORKS: comma-separated addresses or CIDRs (`10.1.2.0/24`,
   * `127.0.0.1`, `fd00::/8`) that may be reached although they are private. Throws naming the
   * variable and the entry that is not one.
   */
  static parse(text: string, variable: string): AddressPolicy {
    const allowed = new BlockList();
    const networks = text
      .split(',')
      .map((entry) => entry.trim())
      .filter(Boolean);
    for (const entry of networks) {
      const [network = '', prefix] = entry.split('/');
      const family = isIP(network);
      const bits =
        prefix === undefined ? (family === 6 ? 128 : 32) : /^\d{1,3}$/.test(prefix) ? Number(prefix) : Number.NaN;
      if (family === 0 || !(bits >= 0 && bits <= (family === 6 ? 128 : 32)))
        throw new Error(`${variable}: "${entry}" is not an IP address or a CIDR such as 10.1.2.0/24 or fd00::/8`);
      allowed.addSubnet(network, bits, family === 6 ? 'ipv6' : 'ipv4');
    }
    return new AddressPolicy(allowed, networks);
  }

  /** True when a POST may connect to this address. */
  allows(address: string): boolean {
    const family = isIP(address);
    if (family === 0) return false;
    const v4 = family === 6 ? embeddedV4(address) : address;
    if (v4 !== undefined) return this.#allowed.check(v4, 'ipv4') || !REFUSED.check(v4, 'ipv4');
    return this.#allowed.check(address, 'ipv6') || !REFUSED.check(address, 'ipv6');
  }
}
