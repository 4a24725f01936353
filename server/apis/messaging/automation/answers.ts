// Answers to `ask` nodes read the way people write them. Numbers: thousands separators and the
// decimal mark of the locale (`250,000` is 250000 in en-US, `250.000` in pt-PT and de-DE); a form
// that reads two ways (`250.000` in en-US) is ambiguous and asked again, never guessed. Dates:
// chrono-node, in the locale's language and day/month order, relative words included
// ("tomorrow", "next friday"). Phones: without `+`, in the contact's country first.
import * as chrono from 'chrono-node';
import { type CountryCode, parsePhoneNumberFromString } from 'libphonenumber-js/min';

export type Parsed = { ok: true; value: string } | { ok: false; reason: string };

const fail = (reason: string): Parsed => ({ ok: false, reason });
const ok = (value: string): Parsed => ({ ok: true, value });

export const DEFAULT_LOCALE = 'en-US';

/** The contact's country from its E.164 phone, or null. */
export function countryOf(phone: string | null): CountryCode | null {
  if (!phone) return null;
  return parsePhoneNumberFromString(phone)?.country ?? null;
}

/** The locale an answer is read in: the node's, else the workspace's, else the one of the contact's country, else en-US. */
export function answerLocale(nodeLocale: string | undefined, contactPhone: string | null, workspaceLocale: string | null = null): string {
  if (nodeLocale && supported(nodeLocale)) return nodeLocale;
  if (workspaceLocale && supported(workspaceLocale)) return workspaceLocale;
  const country = countryOf(contactPhone);
  if (country) {
    const language = new Intl.Locale('und', { region: country }).maximize().language;
    const tag = `${language}-${country}`;
    if (supported(tag)) return tag;
  }
  return DEFAULT_LOCALE;
}

function supported(tag: string): boolean {
  try {
    return Intl.NumberFormat.supportedLocalesOf([tag]).length > 0;
  } catch {
    return false;
  }
}

/** The locale's decimal mark (`.` or `,`). */
export function decimalMark(locale: string): '.' | ',' {
  const part = new Intl.NumberFormat(locale).formatToParts(1.5).find((p) => p.type === 'decimal');
  return part?.value === ',' ? ',' : '.';
}

const SPACES = /[\s\u00a0\u202f]/g;
const CURRENCY = /^[€$£¥₹]|[€$£¥₹]$/g;
const MAX_DIGITS = 30;

/** Digits in groups of three after a first group of one to three. */
const grouped = (parts: string[]) => parts.length > 1 && /^\d{1,3}$/.test(parts[0]!) && parts.slice(1).every((g) => /^\d{3}$/.test(g));

function canonical(sign: string, integer: string, fraction: string): string {
  const int = integer.replace(/^0+(?=\d)/, '');
  const frac = fraction.replace(/0+$/, '');
  const value = frac ? `${int}.${frac}` : int;
  return sign === '-' && /[1-9]/.test(value) ? `-${value}` : value;
}

/**
 * A number as written in `locale`, as a plain decimal string (`1234.5`), exact (no float).
 * Separators are spaces, apostrophes, `.` and `,`; with both `.` and `,` the last one is the
 * decimal mark; one `.` or `,` before exactly three digits is a thousands separator unless it
 * is the locale's decimal mark, when the form is ambiguous.
 */
export function parseNumber(input: string, locale: string): Parsed {
  const text = input.trim().replace(CURRENCY, '').trim();
  const m = /^([+-]?)(\d[\d.,'’\s\u00a0\u202f]*)$/.exec(text);
  if (!m || /[.,'’\s\u00a0\u202f]$/.test(m[2]!)) return fail('not a number');
  const sign = m[1]!;
  // Spaces and apostrophes only ever group thousands.
  const body = m[2]!.replace(SPACES, "'").replace(/’/g, "'");
  if (/[.,'][.,']/.test(body)) return fail('two separators in a row');
  if (body.replace(/\D/g, '').length > MAX_DIGITS) return fail('too many digits');
  const decimal = decimalMark(locale);
  const marks = [...new Set(body.replace(/[\d']/g, ''))];
  let integer: string;
  let fraction = '';
  if (marks.length === 2) {
    // Both: the last is the decimal mark and occurs once; the other groups thousands.
    const last = body[Math.max(body.lastIndexOf('.'), body.lastIndexOf(','))]!;
    const at = body.lastIndexOf(last);
    if (body.indexOf(last) !== at) return fail('the decimal mark appears twice');
    integer = body.slice(0, at);
    fraction = body.slice(at + 1);
    if (/\D/.test(fraction)) return fail('separators after the decimal mark');
  } else if (marks.length === 1) {
    const mark = marks[0]!;
    const pieces = body.split(mark);
    if (pieces.length > 2) {
      // Repeated: it groups thousands (`1.000.000`).
      integer = body;
    } else {
      const [head, tail] = pieces as [string, string];
      const readsAsGrouping = tail.length === 3 && grouped(head.split("'").concat(tail)) && head.replace(/'/g, '') !== '0';
      if (readsAsGrouping && mark === decimal) return fail(`"${input.trim()}" reads two ways in ${locale} (thousands or decimals)`);
      if (readsAsGrouping) integer = body;
      else {
        integer = head;
        fraction = tail;
      }
    }
  } else integer = body;
  const groups = integer.split(/[.,']/);
  if (groups.length > 1 && !grouped(groups)) return fail('thousands separators not every three digits');
  return ok(canonical(sign, groups.join(''), fraction));
}

/** chrono's parser for the locale: its language, with day-first numeric dates where the locale writes them so. */
function dateParser(locale: string): chrono.Chrono {
  const language = new Intl.Locale(locale).language;
  const dayFirst =
    new Intl.DateTimeFormat(locale)
      .formatToParts(new Date(Date.UTC(2026, 11, 1)))
      .map((p) => p.type)
      .filter((t) => t === 'day' || t === 'month')[0] === 'day';
  const byLanguage: Partial<Record<string, chrono.Chrono>> = {
    de: chrono.de.casual,
    fr: chrono.fr.casual,
    pt: chrono.pt.casual,
    nl: chrono.nl.casual,
    es: chrono.es.casual,
    it: chrono.it.casual,
    ru: chrono.ru.casual,
    uk: chrono.uk.casual,
    sv: chrono.sv.casual,
    ja: chrono.ja.casual,
  };
  return byLanguage[language] ?? (dayFirst ? chrono.en.GB : chrono.en.casual);
}

const pad = (n: number) => String(n).padStart(2, '0');

/** A date as written in `locale` (layouts and relative words), as `YYYY-MM-DD`; relative to `now` in UTC. */
export function parseDate(input: string, locale: string, now: Date): Parsed {
  const text = input.trim();
  if (!text || text.length > 100) return fail('not a date');
  const reference = { instant: now, timezone: 0 };
  let results = dateParser(locale).parse(text, reference, { forwardDate: true });
  // English words ("tomorrow") are understood whatever the locale, with its day/month order.
  if (!results.length && new Intl.Locale(locale).language !== 'en') results = (chrono.en.casual as chrono.Chrono).parse(text, reference, { forwardDate: true });
  if (results.length !== 1) return fail(results.length ? 'more than one date' : 'not a date');
  const [result] = results as [chrono.ParsedResult];
  if (result.end) return fail('a range, not a date');
  // Digits outside what was read as the date ("between 3 and 5 December") make it unclear.
  if (/\d/.test(text.replace(result.text, ''))) return fail('more than the date');
  const start = result.start;
  const year = start.get('year');
  const month = start.get('month');
  const day = start.get('day');
  if (year === null || month === null || day === null) return fail('not a whole date');
  return ok(`${String(year).padStart(4, '0')}-${pad(month)}-${pad(day)}`);
}

/**
 * A phone number as E.164. With `+` (or the country's international prefix) it is taken as
 * written; without, it is read in the contact's country first (`912 000 004` from a +351
 * contact is +351912000004), then as international digits.
 */
export function parsePhone(input: string, contactPhone: string | null): Parsed {
  const text = input.trim();
  if (!/^\+?[0-9 ().\-/]{4,32}$/.test(text)) return fail('not a phone number');
  if (text.startsWith('+')) {
    const parsed = parsePhoneNumberFromString(text);
    return parsed?.isPossible() ? ok(parsed.number) : fail('not a possible phone number');
  }
  const country = countryOf(contactPhone);
  const national = country ? parsePhoneNumberFromString(text, country) : undefined;
  const digits = text.replace(/\D/g, '').replace(/^00/, '');
  const international = parsePhoneNumberFromString(`+${digits}`);
  const candidates = [
    national?.isValid() && national,
    international?.isValid() && international,
    national?.isPossible() && national,
    international?.isPossible() && international,
  ];
  const found = candidates.find((c) => c !== undefined && c !== false);
  return found ? ok(found.number) : fail('not a possible phone number');
}
