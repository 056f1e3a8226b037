/**
 * The cron forms telesync takes: five fields (minute hour day-of-month month weekday), or six with
 * seconds first, as node-cron reads them. node-cron accepts steps larger than the field (`*\/61`);
 * this check runs before node-cron's own, so such expressions are refused with the fix.
 */

interface CronField {
  readonly name: string;
  readonly min: number;
  readonly max: number;
  readonly names?: readonly string[];
}

const FIELDS: readonly CronField[] = [
  { name: 'minute', min: 0, max: 59 },
  { name: 'hour', min: 0, max: 23 },
  { name: 'day of month', min: 1, max: 31 },
  {
    name: 'month',
    min: 1,
    max: 12,
    names: ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'],
  },
  // 0 and 7 are both Sunday.
  { name: 'weekday', min: 0, max: 7, names: ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'] },
];

/**
 * What is wrong with a cron expression, as a sentence; undefined when it is well formed. Pure.
 * Five fields, or six with seconds first. Values, ranges, lists, steps (`a-b/n`, `*\/n`, with
 * 1 ≤ n ≤ the field's largest value), month and weekday names are accepted; whether a date exists
 * at all (31 February) is node-cron's check.
 */
export function checkCronExpression(expression: string): string | undefined {
  let fields = expression.trim().split(/\s+/);
  if (fields.length === 6) {
    const problem = checkField(fields[0]!, { name: 'second', min: 0, max: 59 });
    if (problem !== undefined) return problem;
    fields = fields.slice(1);
  }
  if (fields.length !== 5) {
    return `it has ${fields.length} field(s), but a cron expression has five (or six, seconds first)`;
  }
  for (const [index, field] of FIELDS.entries()) {
    const problem = checkField(fields[index]!, field);
    if (problem !== undefined) return problem;
  }
  return undefined;
}

function checkField(text: string, field: CronField): string | undefined {
  for (const item of text.split(',')) {
    const match = /^([^/]+)(?:\/(\d+))?$/.exec(item);
    if (match === null) return `${field.name} "${item}" is not a value, range or step`;
    const [, base, step] = match;
    if (step !== undefined) {
      const n = Number(step);
      if (n < 1 || n > field.max) {
        return `${field.name} step "/${step}" is out of range: use 1 to ${field.max}`;
      }
    }
    if (base === '*') continue;
    const bounds = base!.split('-');
    if (bounds.length > 2) return `${field.name} "${item}" is not a value, range or step`;
    const values = bounds.map((bound) => fieldValue(bound, field));
    if (values.some((value) => value === undefined)) {
      return `${field.name} "${item}" is out of range: use ${field.min} to ${field.max}${field.names ? ` or a name (${field.names[0]}…)` : ''}`;
    }
    if (values.length === 2 && values[0]! > values[1]!) {
      return `${field.name} range "${base}" runs backwards`;
    }
  }
  return undefined;
}

function fieldValue(text: string, field: CronField): number | undefined {
  const named = field.names?.indexOf(text.toLowerCase()) ?? -1;
  if (named >= 0) return named + (field.min === 1 ? 1 : 0);
  if (!/^\d+$/.test(text)) return undefined;
  const value = Number(text);
  return value >= field.min && value <= field.max ? value : undefined;
}
