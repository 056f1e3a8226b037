import { setFlagsFromString } from 'node:v8';

/**
 * `name=value` as a V8 flag to set at start-up, or undefined when whoever started node chose that
 * flag already (`node --name=… bin/telesync.js`, spelt with dashes or underscores). `name` has its
 * leading dashes: `--heap-growing-percent`.
 */
export function v8FlagUnlessChosen(
  name: string,
  value: number,
  execArgv: readonly string[],
): string | undefined {
  const chosen = execArgv.some((arg) => arg.split('=')[0]!.replaceAll('_', '-') === name);
  return chosen ? undefined : `${name}=${value}`;
}

/**
 * Sets the flag of `v8FlagUnlessChosen` in this process, if there is one. Only for flags V8 reads
 * when it uses them, not once at start (the heap's size limits, say, are fixed when it is made).
 */
export function setV8FlagUnlessChosen(
  name: string,
  value: number,
  execArgv: readonly string[] = process.execArgv,
): void {
  const flag = v8FlagUnlessChosen(name, value, execArgv);
  if (flag !== undefined) setFlagsFromString(flag);
}
