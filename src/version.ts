import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The package.json of telesync: nearest one above this file (src/ under tsx, dist/src/ built). */
function readPackageVersion(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let depth = 0; depth < 4; depth++) {
    const candidate = join(dir, 'package.json');
    if (existsSync(candidate)) {
      const pkg = JSON.parse(readFileSync(candidate, 'utf8')) as {
        name?: string;
        version?: string;
      };
      if (pkg.name === 'telesync' && pkg.version !== undefined) return pkg.version;
    }
    dir = dirname(dir);
  }
  return '0.0.0';
}

/** telesync's version, from package.json (sent in the User-Agent and printed by --version). */
export const TELESYNC_VERSION: string = readPackageVersion();
