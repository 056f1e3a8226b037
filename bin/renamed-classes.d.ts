/** The error classes esbuild renamed in bundle text `code` (bin/renamed-classes.js). */
export function renamedClasses(code: string): { renamed: string; original: string }[];
/**
 * Removes the bundle at `outfile` (and its map) when it renames an error class, returning what to
 * do; null when it is sound (bin/renamed-classes.js).
 */
export function rejectRenamedClasses(outfile: string): string | null;
