// Error classes whose bundled name is not their source's. telesync tells errors by their class's
// name (`type` in JSON logs), and bin/build.js bundles without esbuild's keepNames, which would
// restore such names at the cost of a defineProperty on every function made at run time. Two
// ways esbuild renames a class: apart from another of the same name in the one scope of the
// bundle (`ApiError2`), and as the inner name of a class expression (`var ApiError = class
// _ApiError`, for a class that names itself in its body).
import { readFileSync, rmSync } from 'node:fs';

/**
 * The error classes of bundle text `code` (those extending a class whose name ends in `Error`)
 * that esbuild renamed, each with the name its source gave it.
 *
 * @param {string} code
 * @returns {{ renamed: string; original: string }[]}
 */
export function renamedClasses(code) {
  const declared = new Set();
  for (const match of code.matchAll(/\bclass\s+([A-Za-z_$][\w$]*)/g)) declared.add(match[1]);
  const renamed = [];
  const errorClass =
    /(?:\b(?:var|let|const)\s+([A-Za-z_$][\w$]*)\s*=\s*)?\bclass\s+([A-Za-z_$][\w$]*)\s+extends\s+[\w$.]*Error\b/g;
  for (const [, binding, name] of code.matchAll(errorClass)) {
    const apart = /^(.*?[A-Za-z_$])\d+$/.exec(name)?.[1];
    if (binding !== undefined && binding !== name)
      renamed.push({ renamed: name, original: binding });
    else if (apart !== undefined && declared.has(apart))
      renamed.push({ renamed: name, original: apart });
  }
  return renamed;
}

/**
 * Checks the bundle at `outfile`. When it names an error class otherwise than its source, removes
 * it (and its source map) and returns a message saying what to do; null when it is sound. Without
 * its entry, bin/telesync.js runs the sources through tsx: a bundle that fails this check must not
 * run, although it is newer than every source.
 *
 * @param {string} outfile
 * @returns {string | null}
 */
export function rejectRenamedClasses(outfile) {
  const renamed = renamedClasses(readFileSync(outfile, 'utf8'));
  if (renamed.length === 0) return null;
  rmSync(outfile, { force: true });
  rmSync(`${outfile}.map`, { force: true });
  const names = renamed.map(({ renamed: bundled, original }) => `${original} as ${bundled}`);
  return (
    `telesync build: the bundle names error classes otherwise than their source: ${names.join(', ')}. ` +
    'Errors are told by their class name: give one of two classes of one name another name, ' +
    'or move what makes a class name itself in its body out of it. The bundle was removed: ' +
    'the command runs the sources until a build passes.'
  );
}
