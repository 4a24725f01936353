// Schedule windows of message bots, evaluated in the bot's IANA time zone with Intl (no time
// zone table of our own). Times are compared as local wall-clock minutes, so a window of
// 08:00-18:00 means that on the clock in Berlin, summer and winter alike.
import type { MessageBotScheduleRow } from '#server/store/schema/bots.js';

const WEEKDAYS = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'] as const;
const DAY = 1440;

/** Whether `zone` is an IANA time zone this runtime knows (`Europe/Berlin`, `UTC`). */
export function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

const minutes = (hhmm: string) => Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5));

const formats = new Map<string, Intl.DateTimeFormat>();

/** Local wall-clock time as minutes since 1970-01-01 00:00 local (a Thursday). */
export function localMinutes(at: Date, zone: string): number {
  let f = formats.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      hourCycle: 'h23',
    });
    formats.set(zone, f);
  }
  const p = Object.fromEntries(f.formatToParts(at).map((x) => [x.type, x.value]));
  return Date.UTC(Number(p.year), Number(p.month) - 1, Number(p.day), Number(p.hour), Number(p.minute)) / 60_000;
}

/** Whether a local minute falls inside one of the windows (an end before the start runs past midnight). */
function insideAt(schedule: MessageBotScheduleRow, local: number): boolean {
  const day = Math.floor(local / DAY);
  const minute = local - day * DAY;
  const weekday = WEEKDAYS[(((day + 4) % 7) + 7) % 7]!;
  const previous = WEEKDAYS[(((day + 3) % 7) + 7) % 7]!;
  return schedule.windows.some((w) => {
    const start = minutes(w.start);
    const end = minutes(w.end);
    if (start < end) return w.days.includes(weekday) && minute >= start && minute < end;
    return (w.days.includes(weekday) && minute >= start) || (w.days.includes(previous) && minute < end);
  });
}

/** Whether the bot answers at `at`: inside the windows for `inside`, outside them for `outside`. */
export function scheduleApplies(schedule: MessageBotScheduleRow, at: Date): boolean {
  const inside = insideAt(schedule, localMinutes(at, schedule.timezone));
  return schedule.reply_when === 'inside' ? inside : !inside;
}

/**
 * Whether `earlier` and `later` fall in the same period of the schedule: no window opened or
 * closed between them. A schedule bot answers a contact once per period (one away message per
 * closed night, however many messages the contact sends).
 */
export function samePeriod(schedule: MessageBotScheduleRow, earlier: Date, later: Date): boolean {
  const from = localMinutes(earlier, schedule.timezone);
  const to = localMinutes(later, schedule.timezone);
  if (to < from) return true; // a DST fold: the clock went back, no boundary was crossed forwards
  // Every boundary recurs weekly: a gap longer than a week crossed each of them.
  if (to - from > 7 * DAY) return insideAt(schedule, from) === insideAt(schedule, to) && !hasBoundary(schedule);
  const boundaries = schedule.windows.flatMap((w) => [minutes(w.start), minutes(w.end)]);
  for (let day = Math.floor(from / DAY); day <= Math.floor(to / DAY); day++) {
    for (const m of boundaries) {
      const b = day * DAY + m;
      if (b > from && b <= to && insideAt(schedule, b - 1) !== insideAt(schedule, b)) return false;
    }
  }
  return true;
}

/** Whether the windows ever open or close (they could cover the whole week). */
function hasBoundary(schedule: MessageBotScheduleRow): boolean {
  for (let day = 0; day < 7; day++) {
    for (const w of schedule.windows) {
      for (const m of [minutes(w.start), minutes(w.end)]) {
        const b = day * DAY + m;
        if (insideAt(schedule, b - 1) !== insideAt(schedule, b)) return true;
      }
    }
  }
  return false;
}
