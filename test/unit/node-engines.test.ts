import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * package.json's `engines.node` states the Node.js versions telesync works on: no lower than what
 * every installed package declares and what telesync's own code calls (and README says the same).
 * The ranges are read with a small reader of the npm range forms; an unknown form fails loudly.
 */

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** What telesync's own code needs, beyond its dependencies. */
const CODE_NEEDS: Readonly<Record<string, string>> = {
  'util.parseEnv (src/config), import.meta.dirname (tests)': '>=20.12.0',
};

type Version = readonly [number, number, number];

/** [lowest included, lowest excluded) */
type Interval = readonly [Version, Version];

const ZERO: Version = [0, 0, 0];
const INFINITY: Version = [Infinity, 0, 0];

function compare(a: Version, b: Version): number {
  return a[0] - b[0] || a[1] - b[1] || a[2] - b[2];
}

function format(version: Version): string {
  return version.join('.');
}

interface Partial {
  /** Missing or wildcard parts are zero here; `given` says how many parts were numbers. */
  version: Version;
  given: 0 | 1 | 2 | 3;
}

function parsePartial(text: string): Partial {
  const match = /^v?(\d+|[xX*])(?:\.(\d+|[xX*]))?(?:\.(\d+|[xX*]))?$/.exec(text);
  if (match === null) throw new Error(`not a version: "${text}"`);
  const parts = match.slice(1);
  const given = parts.findIndex((part) => part === undefined || !/^\d+$/.test(part));
  const count = (given === -1 ? 3 : given) as Partial['given'];
  const number = (i: number) => (i < count ? Number(parts[i]) : 0);
  return { version: [number(0), number(1), number(2)], given: count };
}

/** The next version after every version the partial matches: 20 → 21.0.0, 20.19 → 20.20.0. */
function after({ version: [major, minor, patch], given }: Partial): Version {
  if (given === 0) return INFINITY;
  if (given === 1) return [major + 1, 0, 0];
  if (given === 2) return [major, minor + 1, 0];
  return [major, minor, patch + 1];
}

function comparatorInterval(comparator: string): Interval {
  const match = /^(>=|<=|>|<|=|\^|~)?(.*)$/.exec(comparator)!;
  const operator = match[1] ?? '=';
  const partial = parsePartial(match[2]!);
  const low = partial.version;
  switch (operator) {
    case '>=':
      return [low, INFINITY];
    case '>':
      return [after(partial), INFINITY];
    case '<':
      return [ZERO, low];
    case '<=':
      return [ZERO, after(partial)];
    case '=':
      return [low, after(partial)];
    case '~':
      return [low, after({ version: low, given: partial.given >= 2 ? 2 : 1 })];
    case '^': {
      const [major, minor] = low;
      const given = major > 0 || partial.given === 1 ? 1 : minor > 0 || partial.given === 2 ? 2 : 3;
      return [low, after({ version: low, given })];
    }
    default:
      throw new Error(`unknown operator in "${comparator}"`);
  }
}

/** A range as the union of intervals, one per `||` alternative. */
function parseRange(range: string): Interval[] {
  return range.split('||').map((alternative) => {
    const text = alternative.trim().replace(/(>=|<=|>|<|=|\^|~)\s+/g, '$1');
    if (text === '' || text === '*') return [ZERO, INFINITY];
    const hyphen = /^(\S+)\s+-\s+(\S+)$/.exec(text);
    const comparators = hyphen === null ? text.split(/\s+/) : [`>=${hyphen[1]}`, `<=${hyphen[2]}`];
    return comparators
      .map(comparatorInterval)
      .reduce(
        ([low, high], [otherLow, otherHigh]) => [
          compare(low, otherLow) >= 0 ? low : otherLow,
          compare(high, otherHigh) <= 0 ? high : otherHigh,
        ],
        [ZERO, INFINITY] as Interval,
      );
  });
}

function satisfies(version: Version, range: string): boolean {
  return parseRange(range).some(
    ([low, high]) => compare(version, low) >= 0 && compare(version, high) < 0,
  );
}

/** The lowest version a range admits. */
function lowerBound(range: string): Version {
  return parseRange(range)
    .filter(([low, high]) => compare(low, high) < 0)
    .map(([low]) => low)
    .reduce((lowest, low) => (compare(low, lowest) < 0 ? low : lowest));
}

interface Requirement {
  who: string;
  range: string;
}

/** engines.node of every package under node_modules (nested ones too), from their package.json. */
function installedRequirements(): Requirement[] {
  const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as {
    packages: Record<string, unknown>;
  };
  const requirements: Requirement[] = [];
  for (const path of Object.keys(lock.packages)) {
    const manifest = join(ROOT, path, 'package.json');
    // Packages for other platforms are in the lock but not installed.
    if (path === '' || !existsSync(manifest)) continue;
    const { engines } = JSON.parse(readFileSync(manifest, 'utf8')) as {
      engines?: { node?: string };
    };
    if (engines?.node !== undefined) requirements.push({ who: path, range: engines.node });
  }
  return requirements;
}

const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  engines: { node: string };
};
const ours = manifest.engines.node;
const requirements = [
  ...installedRequirements(),
  ...Object.entries(CODE_NEEDS).map(([who, range]) => ({ who, range })),
];

describe('engines.node of package.json', () => {
  it('reads the installed packages', () => {
    // Hundreds of packages, a good share of them with engines.node (undici, vitest, kysely, …).
    expect(requirements.length).toBeGreaterThan(50);
    expect(requirements.map((r) => r.who)).toEqual(
      expect.arrayContaining(['node_modules/undici', 'node_modules/vitest']),
    );
  });

  it('starts at the highest minimum any installed package or our own code declares', () => {
    const highest = requirements.reduce((top, requirement) =>
      compare(lowerBound(requirement.range), lowerBound(top.range)) > 0 ? requirement : top,
    );
    expect(
      format(lowerBound(ours)),
      `the highest minimum is ${highest.who}'s ${highest.range}`,
    ).toBe(format(lowerBound(highest.range)));
  });

  it('admits no version that an installed package refuses', () => {
    // A version ours admits and a package refuses lies in a refused stretch of that package, which
    // starts at the end of one of its ranges (or at 0); where that stretch meets one of our ranges,
    // the first version is either that end or the start of our range. So these probes suffice.
    const probes = [
      ...parseRange(ours).map(([low]) => low),
      ...requirements.flatMap(({ range }) => parseRange(range).map(([, high]) => high)),
    ].filter((version) => version[0] !== Infinity && satisfies(version, ours));
    const problems = probes.flatMap((version) =>
      requirements
        .filter((requirement) => !satisfies(version, requirement.range))
        .map((requirement) => `${format(version)}: ${requirement.who} needs ${requirement.range}`),
    );
    expect([...new Set(problems)]).toEqual([]);
  });

  it('is the minimum README states', () => {
    const [major, minor] = lowerBound(ours);
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    expect(readme).toContain(`Node.js ${major}.${minor} or newer`);
  });
});

describe('the range reader', () => {
  it('reads the forms packages use', () => {
    expect(format(lowerBound('^20.19.0 || >=22.12.0'))).toBe('20.19.0');
    expect(format(lowerBound('6.* || 8.* || >= 10.*'))).toBe('6.0.0');
    expect(format(lowerBound('>=20.18.1'))).toBe('20.18.1');
    expect(format(lowerBound('*'))).toBe('0.0.0');
    expect(satisfies([21, 5, 0], '^20.19.0 || >=22.12.0')).toBe(false);
    expect(satisfies([22, 12, 0], '^20.19.0 || ^22.13.0 || >=24')).toBe(false);
    expect(satisfies([24, 0, 0], '^20.19.0 || ^22.13.0 || >=24')).toBe(true);
    expect(satisfies([20, 18, 0], '18 || 20 || >=22')).toBe(true);
    expect(satisfies([0, 2, 9], '^0.2.3')).toBe(true);
    expect(satisfies([0, 3, 0], '^0.2.3')).toBe(false);
    expect(satisfies([1, 2, 9], '~1.2.3')).toBe(true);
    expect(satisfies([1, 3, 0], '~1.2.3')).toBe(false);
    expect(satisfies([2, 0, 0], '1.0.0 - 2.0.0')).toBe(true);
    expect(() => parseRange('>=20.0.0-rc.1')).toThrow(/not a version/);
  });
});
