import { describe, expect, it } from 'vitest';
import { AddressPolicy } from './address-policy.js';

describe('the webhook address policy', () => {
  const closed = AddressPolicy.parse('', 'FLOTILLA_WEBHOOK_ALLOWED_NETWORKS');

  it('refuses this host, private, link-local (metadata), carrier-NAT, multicast and reserved addresses by default', () => {
    for (const address of [
      '127.0.0.1',
      '127.8.9.10',
      '10.0.0.1',
      '172.16.5.4',
      '172.31.255.255',
      '192.168.1.1',
      '169.254.169.254',
      '100.64.0.1',
      '100.100.100.200',
      '0.0.0.0',
      '224.0.0.1',
      '255.255.255.255',
      '198.18.0.1',
    ]) {
      expect(closed.allows(address), address).toBe(false);
    }
    for (const address of [
      '::1',
      '::',
      'fe80::1',
      'fd00:ec2::254',
      'fc00::1',
      'ff02::1',
      '::ffff:127.0.0.1',
      '::ffff:7f00:1',
      '::ffff:169.254.169.254',
      '64:ff9b::a9fe:a9fe',
      '2001:db8::1',
      '2002:a9fe:a9fe::1',
    ]) {
      expect(closed.allows(address), address).toBe(false);
    }
    expect(closed.allows('not an address')).toBe(false);
  });

  it('allows public addresses', () => {
    for (const address of ['93.184.216.34', '8.8.8.8', '172.32.0.1', '2606:4700:4700::1111', '::ffff:8.8.8.8'])
      expect(closed.allows(address), address).toBe(true);
  });

  it('allows the networks the operator lists, and only those', () => {
    const open = AddressPolicy.parse(' 127.0.0.1 , 10.1.2.0/24,fd00::/8', 'FLOTILLA_WEBHOOK_ALLOWED_NETWORKS');
    expect(open.allowed).toEqual(['127.0.0.1', '10.1.2.0/24', 'fd00::/8']);
    expect(open.allows('127.0.0.1')).toBe(true);
    expect(open.allows('::ffff:127.0.0.1')).toBe(true);
    expect(open.allows('127.0.0.2')).toBe(false);
    expect(open.allows('10.1.2.200')).toBe(true);
    expect(open.allows('10.1.3.1')).toBe(false);
    expect(open.allows('fd12::1')).toBe(true);
    expect(open.allows('169.254.169.254')).toBe(false);
  });

  it('refuses a setting that is not a list of addresses or CIDRs, naming the variable and the entry', () => {
    for (const text of ['10.0.0.0/33', 'localhost', '10.0.0.0/x', '::/129', '10.0.0/8']) {
      expect(() => AddressPolicy.parse(text, 'FLOTILLA_WEBHOOK_ALLOWED_NETWORKS'), text).toThrow(
        /^FLOTILLA_WEBHOOK_ALLOWED_NETWORKS: ".+" is not an IP address or a CIDR/,
      );
    }
  });
});
