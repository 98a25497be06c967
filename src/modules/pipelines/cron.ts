/**
 * A syntax check of a pipeline's cron schedule: the classic five fields (minute hour day-of-month
 * month day-of-week), or six with a second (0-59) first, as CIVITAS/CORE clients and most cron
 * libraries for Node write them: `*`, numbers, ranges `a-b`, lists `a,b`, steps `x/n`, and the
 * English month and day abbreviations. Answers why an expression is refused, naming the field at
 * fault, or null.
 */

interface Field { name: string; min: number; max: number; names?: readonly string[] }

const SECOND: Field = { name: 'second', min: 0, max: 59 };

const FIELDS: readonly Field[] = [
  { name: 'minute', min: 0, max: 59 },
  { name: 'hour', min: 0, max: 23 },
  { name: 'day of month', min: 1, max: 31 },
  { name: 'month', min: 1, max: 12, names: ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'] },
  // 0 and 7 are both Sunday, as in Vixie cron.
  { name: 'day of week', min: 0, max: 7, names: ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'] },
];

const ITEM = /^(\*|[A-Za-z0-9]+(?:-[A-Za-z0-9]+)?)(?:\/([0-9]+))?$/;

function valueOf(field: Field, token: string): number | null {
  if (/^[0-9]+$/.test(token)) {
    const value = Number(token);
    return value >= field.min && value <= field.max ? value : null;
  }
  const index = field.names?.indexOf(token.toUpperCase()) ?? -1;
  return index < 0 ? null : index + (field.name === 'month' ? 1 : 0);
}

function itemProblem(field: Field, item: string): string | null {
  const match = ITEM.exec(item);
  const allowed = `${field.min}-${field.max}${field.names ? ` or ${field.names[0]}-${field.names[field.names.length - 1]}` : ''}`;
  if (!match) return `the ${field.name} field has "${item}", which is not *, a value, a range a-b or a step x/n`;
  const [, range, step] = match;
  if (range !== '*') {
    const [from, to] = range!.split('-') as [string, string | undefined];
    const start = valueOf(field, from);
    const end = to === undefined ? start : valueOf(field, to);
    if (start === null || end === null) return `the ${field.name} field has "${item}": values must be ${allowed}`;
    if (start > end) return `the ${field.name} field has "${item}": a range must not run backwards`;
  }
  if (step !== undefined && (Number(step) < 1 || Number(step) > field.max)) return `the ${field.name} field has "${item}": a step must be 1 to ${field.max}`;
  return null;
}

export function cronProblem(expression: string): string | null {
  const parts = expression.trim().split(/\s+/);
  const fields = parts.length === FIELDS.length + 1 ? [SECOND, ...FIELDS] : FIELDS;
  if (parts.length !== fields.length) {
    return 'must be a cron expression of 5 fields (minute hour day-of-month month day-of-week) '
      + `or 6 (second minute hour day-of-month month day-of-week), not ${parts[0] === '' ? 0 : parts.length}`;
  }
  for (const [index, part] of parts.entries()) {
    for (const item of part.split(',')) {
      const problem = itemProblem(fields[index]!, item);
      if (problem) return problem;
    }
  }
  return null;
}
