import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * The guides name files of the repository: as Markdown links (`[guide](docs/schema.md#2-data-tables)`)
 * and as paths in code spans (`bench/results/latest.json`). A reader who follows one must find it,
 * so every relative link and path must exist, and every #anchor must be a heading of its target.
 */

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const GUIDES = [
  'README.md',
  'docs/schema.md',
  'docs/operations.md',
  'docs/contributing.md',
  'docs/scaling.md',
  'docs/architecture.md',
];

/** Paths in code spans that are not repository files, and why. */
const NOT_REPOSITORY_FILES: ReadonlySet<string> = new Set([
  // The embedded database's default directory, created at run time.
  './.telesync',
]);

interface Reference {
  /** As written in the guide. */
  text: string;
  path: string;
  anchor: string | undefined;
}

/** The guide without its fenced code blocks (SQL and shell examples name no files to follow). */
function prose(markdown: string): string {
  return markdown.replace(/^```[^\n]*\n[\s\S]*?^```$/gm, '');
}

/** Relative Markdown links: not URLs with a scheme; an anchor alone points into the guide itself. */
function markdownLinks(markdown: string): Reference[] {
  const references: Reference[] = [];
  for (const match of prose(markdown).matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
    const target = match[1]!;
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
    const [path = '', anchor] = target.split('#', 2);
    references.push({ text: target, path, anchor });
  }
  return references;
}

/** Code spans that are a relative path of at least two segments, e.g. `bench/results/latest.json`. */
function codeSpanPaths(markdown: string): Reference[] {
  const references: Reference[] = [];
  for (const match of prose(markdown).matchAll(/`([^`\n]+)`/g)) {
    const span = match[1]!;
    if (!/^[\w.-]+(?:\/[\w.-]+)+\/?$/.test(span) || NOT_REPOSITORY_FILES.has(span)) continue;
    references.push({ text: span, path: span, anchor: undefined });
  }
  return references;
}

/** GitHub's heading anchors: lower case, punctuation dropped, spaces as hyphens. */
function headingAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>();
  for (const match of prose(markdown).matchAll(/^#{1,6} +(.+?) *#*$/gm)) {
    anchors.add(
      match[1]!
        .toLowerCase()
        .replace(/[^\p{L}\p{N}\s_-]/gu, '')
        .replace(/\s/g, '-'),
    );
  }
  return anchors;
}

function problemsOf(guide: string): string[] {
  const markdown = readFileSync(join(ROOT, guide), 'utf8');
  const directory = dirname(join(ROOT, guide));
  const problems: string[] = [];
  for (const reference of markdownLinks(markdown)) {
    const file = reference.path === '' ? join(ROOT, guide) : join(directory, reference.path);
    if (!existsSync(file)) {
      problems.push(`${guide}: link ${reference.text}: no file ${relative(ROOT, file)}`);
      continue;
    }
    if (reference.anchor !== undefined && file.endsWith('.md')) {
      if (!headingAnchors(readFileSync(file, 'utf8')).has(reference.anchor))
        problems.push(`${guide}: link ${reference.text}: no heading #${reference.anchor}`);
    }
  }
  for (const reference of codeSpanPaths(markdown)) {
    // A path is written from the guide's folder or from the repository's root.
    if (![directory, ROOT].some((base) => existsSync(join(base, reference.path))))
      problems.push(`${guide}: \`${reference.text}\` is not a file of the repository`);
  }
  return problems;
}

describe('the guides name only files that exist', () => {
  for (const guide of GUIDES) {
    it(`${guide}: every relative link, anchor and path resolves`, () => {
      expect(problemsOf(guide)).toEqual([]);
    });
  }

  it('finds the links, anchors and paths a guide writes', () => {
    const markdown = [
      '# A guide',
      '## 2. Data tables',
      'See [the guide](docs/schema.md#2-data-tables), [here](#2-data-tables) and',
      '[the service](https://api.plivo.com/v1/), `bench/results/latest.json`, `shared/spec/api.md`,',
      '`/healthz`, `./.telesync` and `postgres://u@h:5432/db`.',
      '```sh',
      'cat not/a/reference.md',
      '```',
    ].join('\n');
    expect(markdownLinks(markdown)).toEqual([
      { text: 'docs/schema.md#2-data-tables', path: 'docs/schema.md', anchor: '2-data-tables' },
      { text: '#2-data-tables', path: '', anchor: '2-data-tables' },
    ]);
    expect(codeSpanPaths(markdown).map((reference) => reference.path)).toEqual([
      'bench/results/latest.json',
      'shared/spec/api.md',
    ]);
    expect([...headingAnchors(markdown)]).toEqual(['a-guide', '2-data-tables']);
    expect(headingAnchors('### `trunk_calls`\n## 6. Nightly billing: example queries')).toEqual(
      new Set(['trunk_calls', '6-nightly-billing-example-queries']),
    );
  });
});
