import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { rejectRenamedClasses, renamedClasses } from '../../bin/renamed-classes.js';
import { REPOSITORY_ROOT } from '../support/container-files.js';

const BUNDLE = join(REPOSITORY_ROOT, 'dist/src/cli/entry.js');

describe('renamedClasses', () => {
  it('finds an error class renamed apart from another of the same name', () => {
    const code = [
      'class ApiError extends Error { name = "ApiError"; }',
      'class ApiError2 extends Error { name = "ApiError"; }',
      'class Base64 {}',
      'class Base642 {}',
    ].join('\n');
    expect(renamedClasses(code)).toEqual([{ renamed: 'ApiError2', original: 'ApiError' }]);
  });

  it('finds an error class bundled as a class expression of another name', () => {
    const code = [
      'var ApiError = class _ApiError extends Error {};',
      'var Late = class _Late extends ApiError {};',
      'var Kysely = class _Kysely extends QueryCreator {};',
      'var Ended = class Ended extends Error {};',
      'var Stopped = class extends Error {};',
    ].join('\n');
    expect(renamedClasses(code)).toEqual([
      { renamed: '_ApiError', original: 'ApiError' },
      { renamed: '_Late', original: 'Late' },
    ]);
  });

  it('leaves an error class whose name ends in digits when no class has the name without them', () => {
    expect(
      renamedClasses(
        'class Utf8Error extends Error {}\nclass Sha256 extends RangeError {}\nclass Utf extends Error {}',
      ),
    ).toEqual([]);
  });

  // `npm ci` builds the bundle (prepare); without it, bin/telesync.js runs the sources.
  it.runIf(existsSync(BUNDLE))(
    'holds for the command bundle, whose error classes keep their names',
    () => {
      const code = readFileSync(BUNDLE, 'utf8');
      // As a declaration, or as an anonymous class expression, whose name is its variable's.
      expect(code).toMatch(/\b(?:class ApiError|var ApiError = class) extends Error\b/);
      expect(code).not.toMatch(/\b__name\(/);
      expect(renamedClasses(code)).toEqual([]);
    },
  );
});

describe('rejectRenamedClasses', () => {
  function bundleOf(code: string): { outfile: string; remove: () => void } {
    const dir = mkdtempSync(join(tmpdir(), 'telesync-bundle-'));
    const outfile = join(dir, 'entry.js');
    writeFileSync(outfile, code);
    writeFileSync(`${outfile}.map`, '{}');
    return { outfile, remove: () => rmSync(dir, { recursive: true, force: true }) };
  }

  it('removes a bundle that renames an error class, so the command runs the sources', () => {
    const { outfile, remove } = bundleOf('var ApiError = class _ApiError extends Error {};');
    try {
      const message = rejectRenamedClasses(outfile);
      expect(message).toContain('ApiError as _ApiError');
      expect(message).toContain('runs the sources');
      expect(existsSync(outfile)).toBe(false);
      expect(existsSync(`${outfile}.map`)).toBe(false);
    } finally {
      remove();
    }
  });

  it('keeps a sound bundle', () => {
    const { outfile, remove } = bundleOf('class ApiError extends Error {}');
    try {
      expect(rejectRenamedClasses(outfile)).toBeNull();
      expect(existsSync(outfile)).toBe(true);
      expect(existsSync(`${outfile}.map`)).toBe(true);
    } finally {
      remove();
    }
  });
});
