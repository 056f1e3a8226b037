/** The error classes esbuild renamed in bundle text `code` (bin/renamed-classes.js). */
export function renamedClasses(code: string): { renamed: string; original: string }[];
