import { CronExpressionParser } from 'cron-parser';

/**
 * When a scheduled source polls next: the pipeline's cron `schedule` (five fields, or six with
 * seconds first), read in UTC, or every `fallbackMs` without one.
 */
export type NextPoll = (now: Date) => Date;

export function pollSchedule(schedule: string | null, fallbackMs: number): NextPoll | string {
  if (schedule === null || schedule.trim() === '') return (now) => new Date(now.getTime() + fallbackMs);
  const fields = schedule.trim().split(/\s+/).length;
  if (schedule.length > 200 || (fields !== 5 && fields !== 6)) return 'the pipeline schedule must be a cron expression of five or six fields';
  try {
    CronExpressionParser.parse(schedule, { tz: 'UTC' });
  } catch (error) {
    return `the pipeline schedule is not a cron expression (${error instanceof Error ? error.message.slice(0, 120) : 'unreadable'})`;
  }
  return (now) => CronExpressionParser.parse(schedule, { currentDate: now, tz: 'UTC' }).next().toDate();
}
