// Answers to `ask` nodes read the way people write them. Numbers: thousands separators and the
// decimal mark of the locale (`250,000` is 250000 in en-US, `250.000` in pt-PT and de-DE); a form
// that reads two ways (`250.000` in en-US) is ambiguous and asked again, never guessed. Dates:
// chrono-node, in the locale's language and day/month order, relative words included
// ("tomorrow", "next friday"), "the day after tomorrow" in each language (chrono reads
// "depois de amanhã" as tomorrow), and day.month forms without a year ("03.12."). Currency
// symbols and codes of any length before or after an amount are set aside ("R$ 1.234,56",
// "USD 250,000", "250.000 €") and kept, so the value goes back formatted in that currency.
// Phones: without `+`, in the contact's country first, then the workspace's; only valid numbers.
import * as chrono from 'chrono-node';
import type { CountryCode } from 'libphonenumber-js/min';
import { countryOfNumber, readPhone } from '#server/lib/phone.js';

/** A parsed answer: the stored value, and for an amount the currency it was written with (ISO 4217). */
export type Parsed = { ok: true; value: string; currency?: string } | { ok: false; reason: string };

const fail = (reason: string): Parsed => ({ ok: false, reason });
const ok = (value: string): Parsed => ({ ok: true, value });

export const DEFAULT_LOCALE = 'en-US';

/** The contact's country from its E.164 phone, or null. */
export function countryOf(phone: string | null): CountryCode | null {
  return countryOfNumber(phone);
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
const MAX_DIGITS = 30;

/** Currency signs people write, longest first (`R$` before `$`), and the ISO 4217 code of each. */
const SIGNS: [string, string][] = [
  ['US$', 'USD'],
  ['R$', 'BRL'],
  ['C$', 'CAD'],
  ['A$', 'AUD'],
  ['NZ$', 'NZD'],
  ['HK$', 'HKD'],
  ['S$', 'SGD'],
  ['MX$', 'MXN'],
  ['S/', 'PEN'],
  ['Fr.', 'CHF'],
  ['zł', 'PLN'],
  ['Kč', 'CZK'],
  ['€', 'EUR'],
  ['£', 'GBP'],
  ['¥', 'JPY'],
  ['₹', 'INR'],
  ['₩', 'KRW'],
  ['₽', 'RUB'],
  ['₺', 'TRY'],
  ['₪', 'ILS'],
  ['₴', 'UAH'],
  ['₦', 'NGN'],
  ['₱', 'PHP'],
  ['฿', 'THB'],
];

/** Countries whose own currency is written with a bare `$`. */
const DOLLAR_OF: Partial<Record<string, string>> = {
  CA: 'CAD',
  AU: 'AUD',
  NZ: 'NZD',
  MX: 'MXN',
  AR: 'ARS',
  CL: 'CLP',
  CO: 'COP',
  SG: 'SGD',
  HK: 'HKD',
  BR: 'BRL',
};

let isoCodes: Set<string> | undefined;
/** Every ISO 4217 code Intl knows (`USD`, `EUR`, `BRL`, …). */
function currencyCodes(): Set<string> {
  isoCodes ??= new Set(Intl.supportedValuesOf('currency'));
  return isoCodes;
}

/** The amount without its currency sign or code (before or after it), and that currency. */
export function splitCurrency(input: string, locale: string): { amount: string; currency: string | null } {
  const text = input.trim();
  const code = /^([A-Za-z]{3})\.?[\s\u00a0\u202f]*(?=[+-]?\d)|(?<=\d)[\s\u00a0\u202f]*([A-Za-z]{3})\.?$/.exec(text);
  if (code) {
    const iso = (code[1] ?? code[2])!.toUpperCase();
    if (currencyCodes().has(iso)) return { amount: text.replace(code[0], '').trim(), currency: iso };
  }
  for (const [sign, iso] of SIGNS) {
    if (text.startsWith(sign)) return { amount: text.slice(sign.length).trim(), currency: iso };
    if (text.endsWith(sign)) return { amount: text.slice(0, -sign.length).trim(), currency: iso };
  }
  if (text.startsWith('$') || text.endsWith('$')) {
    const region = new Intl.Locale(locale).maximize().region ?? 'US';
    return { amount: text.replace(/^\$|\$$/g, '').trim(), currency: DOLLAR_OF[region] ?? 'USD' };
  }
  return { amount: text, currency: null };
}

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
  const { amount: text, currency } = splitCurrency(input, locale);
  const parsed = parseAmount(text, input, locale);
  return parsed.ok && currency ? { ...parsed, currency } : parsed;
}

function parseAmount(text: string, input: string, locale: string): Parsed {
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
  return byLanguage[language] ?? (dayFirst(locale) ? chrono.en.GB : chrono.en.casual);
}

const pad = (n: number) => String(n).padStart(2, '0');

/** Lower case, accents and punctuation around words dropped: how the relative words are matched. */
const fold = (text: string) =>
  text
    .normalize('NFKD')
    .replace(/\p{M}/gu, '')
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, ' ')
    .trim();

/**
 * Words for a day counted from today, in every supported language, matched whole (accents and
 * case aside), so the answer's language need not be the workspace's. chrono knows "tomorrow" in
 * each language but reads "depois de amanhã" and "pasado mañana" as tomorrow.
 */
const RELATIVE_DAYS: [string, number][] = [
  ['the day after tomorrow', 2],
  ['day after tomorrow', 2],
  ['ubermorgen', 2],
  ['uebermorgen', 2],
  ['depois de amanha', 2],
  ['depois d amanha', 2],
  ['pasado manana', 2],
  ['passado manana', 2],
  ['apres demain', 2],
  ['dopodomani', 2],
  ['overmorgen', 2],
  ['tomorrow', 1],
  ['morgen', 1],
  ['amanha', 1],
  ['manana', 1],
  ['demain', 1],
  ['domani', 1],
  ['today', 0],
  ['heute', 0],
  ['hoje', 0],
  ['hoy', 0],
  ['aujourd hui', 0],
  ['oggi', 0],
  ['vandaag', 0],
];

/** Small words a day is said with ("para amanhã", "am Dienstag"), ignored around a relative word. */
const FILLERS = new Set([
  'on',
  'for',
  'am',
  'fur',
  'para',
  'pra',
  'pro',
  'de',
  'el',
  'la',
  'para el',
  'a',
  'pour',
  'per',
  'e',
  'und',
  'and',
  'y',
  'please',
  'bitte',
  'por favor',
]);

function relativeDay(text: string): number | null {
  let words = fold(text);
  for (const filler of FILLERS) if (words.startsWith(`${filler} `)) words = words.slice(filler.length + 1);
  for (const filler of ['please', 'bitte', 'por favor']) if (words.endsWith(` ${filler}`)) words = words.slice(0, -filler.length - 1);
  const found = RELATIVE_DAYS.find(([phrase]) => phrase === words);
  return found ? found[1] : null;
}

/** Day and month in digits, with or without the year, in the locale's order ("03.12.", "3.12.2026", "3/12", "12/3" in en-US). */
function numericDate(text: string, locale: string, now: Date): Parsed | null {
  const m = /^(?:[\p{L}]+\.?\s+)?(\d{1,2})([./-])(\d{1,2})(?:\2(\d{4}|\d{2}))?\.?$/u.exec(text);
  if (!m) return null;
  const [first, second] = [Number(m[1]), Number(m[3])];
  const [day, month] = dayFirst(locale) ? [first, second] : [second, first];
  const today = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
  let year = m[4] ? Number(m[4].length === 2 ? `20${m[4]}` : m[4]) : now.getUTCFullYear();
  const at = (y: number) => new Date(Date.UTC(y, month - 1, day));
  let date = at(year);
  if (date.getUTCMonth() !== month - 1 || date.getUTCDate() !== day) return fail('not a real date');
  // Without a year: the next such day to come (today included).
  if (!m[4] && date.getTime() < today) {
    year += 1;
    date = at(year);
    if (date.getUTCDate() !== day) return fail('not a real date');
  }
  return ok(`${String(year).padStart(4, '0')}-${pad(month)}-${pad(day)}`);
}

function dayFirst(locale: string): boolean {
  return (
    new Intl.DateTimeFormat(locale)
      .formatToParts(new Date(Date.UTC(2026, 11, 1)))
      .map((p) => p.type)
      .filter((t) => t === 'day' || t === 'month')[0] === 'day'
  );
}

/** A date as written in `locale` (layouts and relative words), as `YYYY-MM-DD`; relative to `now` in UTC. */
export function parseDate(input: string, locale: string, now: Date): Parsed {
  const text = input.trim();
  if (!text || text.length > 100) return fail('not a date');
  const offset = relativeDay(text);
  if (offset !== null) {
    const day = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + offset));
    return ok(day.toISOString().slice(0, 10));
  }
  const numeric = numericDate(text, locale, now);
  if (numeric) return numeric;
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
 * A phone number as E.164, only a *valid* one (server/lib/phone.ts). With `+` (or an
 * international prefix) it is taken as written; without, it is read as a national number of the
 * contact's own country when known (`912 000 004` from a +351 contact is +351912000004), else of
 * the workspace's country, then as international digits. `030 1234567` from a US contact is no
 * US number and is asked again, never stored as +10301234567.
 */
export function parsePhone(input: string, contactPhone: string | null, workspaceCountry: CountryCode | null = null): Parsed {
  const read = readPhone(input, countryOf(contactPhone) ?? workspaceCountry);
  return read.ok ? ok(read.e164) : fail(read.reason);
}
