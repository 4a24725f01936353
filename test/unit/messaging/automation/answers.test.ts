// The catalogue of how `ask` answers are read: one case per rule. Numbers by each locale's
// separators (ambiguous forms refused, never guessed), dates in each locale's layouts and
// relative words, phones without `+` in the contact's country, and the locale an answer is
// read in when the node names none.
import { describe, expect, it } from 'vitest';
import { answerLocale, parseDate, parseNumber, parsePhone } from '#server/apis/messaging/automation/answers.js';
import { expand, KINDS_KEY, type RunState } from '#server/apis/messaging/automation/contact-state.js';
import { fillPlaceholders } from '#server/apis/messaging/bots/replies.js';

const NOW = new Date('2026-11-27T14:00:00Z'); // a Friday

const number = (text: string, locale: string) => parseNumber(text, locale);
const value = (parsed: ReturnType<typeof parseNumber>) => (parsed.ok ? parsed.value : `refused: ${parsed.reason}`);

describe('numbers by locale', () => {
  const cases: [string, string, string][] = [
    // en-US: `,` groups thousands, `.` is the decimal mark.
    ['en-US', '250,000', '250000'],
    ['en-US', '1,234,567.89', '1234567.89'],
    ['en-US', '12.5', '12.5'],
    ['en-US', '250 000', '250000'],
    ['en-US', '$ 1,200', '1200'],
    // pt-PT and de-DE: `.` (or a space) groups, `,` is the decimal mark.
    ['pt-PT', '250.000', '250000'],
    ['pt-PT', '250 000', '250000'],
    ['pt-PT', '1 250,5', '1250.5'],
    ['pt-PT', '12,50 €', '12.5'],
    ['de-DE', '1.234,56', '1234.56'],
    ['de-DE', '1.000.000', '1000000'],
    ['de-DE', '0,500', '0.5'],
    // fr-FR: a (narrow) no-break space groups.
    ['fr-FR', '250\u202f000', '250000'],
    ['fr-FR', '3,75', '3.75'],
    // de-CH: the apostrophe groups, `.` is the decimal mark.
    ['de-CH', "1'250.50", '1250.5'],
    // Either locale: both marks present, the last one is the decimal mark.
    ['en-US', '1.234,56', '1234.56'],
    ['de-DE', '1,234.56', '1234.56'],
    // One mark before other than three digits can only be a decimal mark.
    ['en-US', '1,5', '1.5'],
    ['pt-PT', '2.5', '2.5'],
    // Signs, leading zeros, and digits past a float's precision kept exactly.
    ['en-US', '-3', '-3'],
    ['en-US', '007', '7'],
    ['en-US', '123456789012345678901', '123456789012345678901'],
  ];
  for (const [locale, text, expected] of cases) it(`${locale}: "${text}" is ${expected}`, () => expect(value(number(text, locale))).toBe(expected));

  const ambiguous: [string, string][] = [
    ['en-US', '250.000'], // thousands in pt-PT, three decimals in en-US
    ['pt-PT', '250,000'],
    ['de-DE', '1,500'],
  ];
  for (const [locale, text] of ambiguous)
    it(`${locale}: "${text}" reads two ways and is refused (asked again), not guessed`, () => {
      const parsed = number(text, locale);
      expect(parsed.ok).toBe(false);
      expect(parsed.ok ? '' : parsed.reason).toMatch(/reads two ways/);
    });

  const refused = ['around 300k', '300k', 'three hundred', '1,2,3', '12,34,567', '1..5', '1,', '', '€', '1.234.56'];
  for (const text of refused) it(`"${text}" is not a number`, () => expect(number(text, 'en-US').ok).toBe(false));
});

describe('dates by locale', () => {
  const cases: [string, string, string][] = [
    // Numeric layouts follow the locale's day/month order.
    ['en-US', '01/12/2026', '2026-01-12'],
    ['en-GB', '01/12/2026', '2026-12-01'],
    ['pt-PT', '01/12/2026', '2026-12-01'],
    ['de-DE', '01.12.2026', '2026-12-01'],
    ['en-US', '2026-12-01', '2026-12-01'],
    // Month names, with and without the year (the next one to come).
    ['en-US', 'December 3', '2026-12-03'],
    ['en-GB', '3 Dec 2026', '2026-12-03'],
    ['pt-PT', '3 de dezembro', '2026-12-03'],
    // Relative words, in the locale's language and in English.
    ['en-US', 'tomorrow', '2026-11-28'],
    ['en-US', 'next friday', '2026-12-04'],
    ['en-US', 'in 3 days', '2026-11-30'],
    ['pt-PT', 'amanhã', '2026-11-28'],
    ['de-DE', 'morgen', '2026-11-28'],
    ['es-ES', 'mañana', '2026-11-28'],
    ['fr-FR', 'demain', '2026-11-28'],
    ['pt-PT', 'tomorrow', '2026-11-28'],
  ];
  for (const [locale, text, expected] of cases)
    it(`${locale}: "${text}" is ${expected}`, () => {
      const parsed = parseDate(text, locale, NOW);
      expect(parsed.ok ? parsed.value : parsed.reason).toBe(expected);
    });

  const refused: [string, string][] = [
    ['en-US', 'soon'],
    ['en-US', 'around 300k'],
    ['en-US', 'between 3 and 5 December'],
    ['en-US', 'from monday to friday'],
    ['pt-PT', '31/02/2026'],
    ['en-US', ''],
  ];
  for (const [locale, text] of refused) it(`${locale}: "${text}" is not one date`, () => expect(parseDate(text, locale, NOW).ok).toBe(false));
});

// The forms customers of a business write, per locale: input → the value stored. The closing
// table of issue 41 is this one.
describe('answer forms per locale (as customers write them)', () => {
  const dates: [string, string, string][] = [
    ['en-US', 'today', '2026-11-27'],
    ['en-US', 'tomorrow', '2026-11-28'],
    ['en-US', 'the day after tomorrow', '2026-11-29'],
    ['en-US', 'day after tomorrow', '2026-11-29'],
    ['en-US', '12/3', '2026-12-03'], // month first
    ['en-US', '12/3/2026', '2026-12-03'],
    ['en-US', 'Dec 3', '2026-12-03'],
    ['de-DE', 'heute', '2026-11-27'],
    ['de-DE', 'morgen', '2026-11-28'],
    ['de-DE', 'übermorgen', '2026-11-29'],
    ['de-DE', 'Übermorgen!', '2026-11-29'],
    ['de-DE', '03.12.', '2026-12-03'], // day.month. without a year: the next to come
    ['de-DE', '3.12.2026', '2026-12-03'],
    ['de-DE', '3.12.26', '2026-12-03'],
    ['de-DE', 'am 3.12.', '2026-12-03'],
    ['de-DE', '3. Dezember', '2026-12-03'],
    ['de-DE', '01.11.', '2027-11-01'], // already past this year
    ['pt-BR', 'hoje', '2026-11-27'],
    ['pt-BR', 'amanhã', '2026-11-28'],
    ['pt-BR', 'depois de amanhã', '2026-11-29'], // not tomorrow
    ['pt-BR', 'Depois de amanha', '2026-11-29'],
    ['pt-BR', '3/12', '2026-12-03'], // day first
    ['pt-BR', '03/12/2026', '2026-12-03'],
    ['pt-BR', 'dia 3/12', '2026-12-03'],
    ['pt-BR', '3 de dezembro', '2026-12-03'],
    ['es-ES', 'hoy', '2026-11-27'],
    ['es-ES', 'mañana', '2026-11-28'],
    ['es-ES', 'pasado mañana', '2026-11-29'], // not tomorrow
    ['es-ES', '3/12', '2026-12-03'],
    ['es-ES', '3 de diciembre', '2026-12-03'],
  ];
  for (const [locale, text, expected] of dates)
    it(`${locale}: date "${text}" is ${expected}`, () => {
      const parsed = parseDate(text, locale, NOW);
      expect(parsed.ok ? parsed.value : parsed.reason).toBe(expected);
    });
  for (const [locale, text] of [
    ['de-DE', '31.02.'],
    ['es-ES', '31/2'],
    ['pt-BR', 'depois'],
  ] as const)
    it(`${locale}: "${text}" is no date`, () => expect(parseDate(text, locale, NOW).ok).toBe(false));

  const amounts: [string, string, string, string | undefined][] = [
    ['pt-BR', 'R$ 1.234,56', '1234.56', 'BRL'],
    ['pt-BR', '1.234,56 R$', '1234.56', 'BRL'],
    ['pt-BR', 'R$1.234,56', '1234.56', 'BRL'],
    ['pt-BR', 'BRL 10,5', '10.5', 'BRL'],
    ['en-US', 'USD 250,000', '250000', 'USD'],
    ['en-US', '250,000 USD', '250000', 'USD'],
    ['en-US', 'usd 12', '12', 'USD'],
    ['en-US', '$250,000', '250000', 'USD'],
    ['en-US', 'US$ 99.90', '99.9', 'USD'],
    ['de-DE', 'EUR 250.000', '250000', 'EUR'],
    ['de-DE', '250.000 €', '250000', 'EUR'],
    ['de-DE', '250.000,50 EUR', '250000.5', 'EUR'],
    ['de-DE', '1,5', '1.5', undefined],
    ['es-ES', '250.000 €', '250000', 'EUR'],
    ['es-ES', '1.500,75 €', '1500.75', 'EUR'],
    ['de-CH', "CHF 1'250.50", '1250.5', 'CHF'],
  ];
  for (const [locale, text, expected, currency] of amounts)
    it(`${locale}: amount "${text}" is ${expected}${currency ? ` ${currency}` : ''}`, () => {
      const parsed = parseNumber(text, locale);
      expect(parsed).toEqual({ ok: true, value: expected, ...(currency ? { currency } : {}) });
    });
  it('three letters that are no currency are not an amount', () => expect(parseNumber('ABC 12', 'en-US').ok).toBe(false));
});

describe('values written back to the customer in their locale', () => {
  const state = (writeLocale: string, vars: Record<string, unknown>, fields: Record<string, string | number> = {}): RunState => ({
    contact: { id: null, name: null, phone: null, email: null, fields, tags: new Set() },
    vars,
    trigger: { text: null },
    reply: null,
    locale: null,
    writeLocale,
  });
  const vars = {
    rooms: '1.5',
    budget: '250000',
    price: '1234.56',
    day: '2026-12-03',
    note: '2026-12-03',
    [KINDS_KEY]: { rooms: { type: 'number' }, budget: { type: 'number', currency: 'EUR' }, price: { type: 'number', currency: 'BRL' }, day: { type: 'date' } },
  };
  const cases: [string, string, string][] = [
    ['de-DE', '{{vars.rooms}} Zimmer', '1,5 Zimmer'],
    ['de-DE', '{{vars.budget}}', '250.000,00\u00a0€'],
    ['de-DE', '{{vars.day}}', '3. Dezember 2026'],
    ['pt-BR', '{{vars.price}}', 'R$\u00a01.234,56'],
    ['pt-BR', '{{vars.day}}', '3 de dezembro de 2026'],
    ['en-US', '{{vars.rooms}} rooms on {{vars.day}}', '1.5 rooms on December 3, 2026'],
    ['es-ES', '{{vars.day}}', '3 de diciembre de 2026'],
    // A text answer that looks like a date is the customer's own words: kept as written.
    ['de-DE', '{{vars.note}}', '2026-12-03'],
    // Custom fields: numbers and ISO dates.
    ['de-DE', '{{contact.fields.party_size}} / {{contact.fields.visit}}', '1.234 / 3. Dezember 2026'],
  ];
  for (const [locale, text, expected] of cases)
    it(`${locale}: "${text}" → "${expected}"`, () => {
      expect(expand(text, state(locale, vars, { party_size: 1234, visit: '2026-12-03' }), true)).toBe(expected);
      // Elsewhere (HTTP bodies, field values) the stored value is used as it is.
      if (text === '{{vars.rooms}} Zimmer') expect(expand(text, state(locale, vars))).toBe('1.5 Zimmer');
    });
});

it('bot replies: number and date fields in the reader’s locale, raw without one', () => {
  const contact = { id: 'ct_1', phone: '+4915112345678', name: 'Lena', custom_fields: { orders: 1234.5, visit: '2026-12-03', city: 'Köln' } };
  const text = '{{contact.name}}: {{contact.fields.orders}} / {{contact.fields.visit}} / {{contact.fields.city}}';
  expect(fillPlaceholders(text, contact, 'de-DE')).toBe('Lena: 1.234,5 / 3. Dezember 2026 / Köln');
  expect(fillPlaceholders(text, contact, 'pt-BR')).toBe('Lena: 1.234,5 / 3 de dezembro de 2026 / Köln');
  expect(fillPlaceholders(text, contact)).toBe('Lena: 1234.5 / 2026-12-03 / Köln');
});

describe('phones without +, in the contact’s country', () => {
  const cases: [string, string | null, string][] = [
    ['912 000 004', '+351912000004', '+351912000004'], // not +912000004
    ['00351 912 000 004', '+4915112345678', '+351912000004'], // the international prefix
    ['0151 12345678', '+4915112345678', '+4915112345678'], // a national trunk 0
    ['(415) 555-0100', '+14155550100', '+14155550100'],
    ['+351 912 000 004', null, '+351912000004'], // with + it is taken as written
    ['4915112345678', '+351912000004', '+4915112345678'], // not a Portuguese number: international digits
    ['4915112345678', null, '+4915112345678'],
  ];
  for (const [text, contact, expected] of cases)
    it(`"${text}" from ${contact ?? 'a contact of unknown country'} is ${expected}`, () => {
      const parsed = parsePhone(text, contact);
      expect(parsed.ok ? parsed.value : parsed.reason).toBe(expected);
    });

  for (const text of ['912 000 004', 'call me', '12', '+1 23'])
    it(`"${text}" without a country to read it in is refused`, () => expect(parsePhone(text, null).ok).toBe(false));

  // Only *valid* numbers: "possible" let +10301234567 (a Berlin number read as American) through.
  const withWorkspace: [string, string | null, 'US' | 'DE' | null, string | null][] = [
    ['617 555 9008', null, 'US', '+16175559008'], // the workspace's country when the contact's is unknown
    ['030 1234567', '+16175559008', null, null], // a US customer: no US number, asked again
    ['030 1234567', '+16175559008', 'DE', null], // the contact's own country wins over the workspace's
    ['030 1234567', null, 'DE', '+49301234567'],
    ['+10301234567', null, 'US', null], // with +, but valid nowhere
    ['0049 30 1234567', '+16175559008', null, '+49301234567'],
    ['011 49 30 1234567', '+16175559008', null, '+49301234567'], // the US international prefix
    ['+1 555 010 0202', null, null, '+15550100202'], // Meta's test numbers (555) are kept
  ];
  for (const [text, contact, country, expected] of withWorkspace)
    it(`"${text}" from ${contact ?? 'a contact of unknown country'} in a ${country ?? 'countryless'} workspace is ${expected ?? 'asked again'}`, () => {
      const parsed = parsePhone(text, contact, country);
      expect(parsed.ok ? parsed.value : null).toBe(expected);
    });
});

describe('the locale an answer is read in', () => {
  it('the node’s when it names one, else the contact’s country’s, else en-US', () => {
    expect(answerLocale('de-DE', '+351912000004')).toBe('de-DE');
    expect(answerLocale(undefined, '+351912000004')).toBe('pt-PT');
    expect(answerLocale(undefined, '+4915112345678')).toBe('de-DE');
    expect(answerLocale(undefined, '+14155550100')).toBe('en-US');
    expect(answerLocale(undefined, null)).toBe('en-US');
    // The workspace's locale comes after the node's and before the contact's country.
    expect(answerLocale(undefined, '+14155550100', 'pt-PT')).toBe('pt-PT');
    expect(answerLocale('de-DE', '+14155550100', 'pt-PT')).toBe('de-DE');
    expect(answerLocale(undefined, null, 'pt-PT')).toBe('pt-PT');
  });
});
