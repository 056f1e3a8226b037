import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * A throwaway certificate authority and a server certificate it signed for localhost and
 * 127.0.0.1, made with the openssl command into a temporary directory: what a test needs to run a
 * wss:// or https:// server that a client trusts through its `ca` option only (never by turning
 * verification off).
 */
export interface TestCertificateAuthority {
  /** The directory holding the files; remove() deletes it. */
  readonly dir: string;
  /** The CA certificate, PEM, and its file (what --media-ca takes). */
  readonly caPem: string;
  readonly caFile: string;
  /** The server's certificate and key, PEM. */
  readonly serverCertPem: string;
  readonly serverKeyPem: string;
  remove(): void;
}

/** Makes a CA and a server certificate (EC P-256, valid two days). Takes about 100 ms. */
export function createTestCertificateAuthority(): TestCertificateAuthority {
  const dir = mkdtempSync(join(tmpdir(), 'telesync-test-ca-'));
  const file = (name: string): string => join(dir, name);
  const openssl = (args: string[]): void => {
    execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
  };
  const ecKey = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  openssl([
    'req',
    '-x509',
    ...ecKey,
    '-keyout',
    'ca.key',
    '-out',
    'ca.pem',
    '-days',
    '2',
    '-subj',
    '/CN=telesync test CA',
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  ]);
  openssl([
    'req',
    ...ecKey,
    '-keyout',
    'server.key',
    '-out',
    'server.csr',
    '-subj',
    '/CN=localhost',
  ]);
  writeFileSync(
    file('server.ext'),
    [
      'subjectAltName=DNS:localhost,IP:127.0.0.1',
      'basicConstraints=CA:FALSE',
      'keyUsage=digitalSignature,keyEncipherment',
      'extendedKeyUsage=serverAuth',
    ].join('\n'),
  );
  openssl([
    'x509',
    '-req',
    '-in',
    'server.csr',
    '-CA',
    'ca.pem',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-out',
    'server.pem',
    '-days',
    '2',
    '-extfile',
    'server.ext',
  ]);
  return {
    dir,
    caPem: readFileSync(file('ca.pem'), 'utf8'),
    caFile: file('ca.pem'),
    serverCertPem: readFileSync(file('server.pem'), 'utf8'),
    serverKeyPem: readFileSync(file('server.key'), 'utf8'),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
