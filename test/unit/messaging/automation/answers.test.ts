// The catalogue of how `ask` answers are read: one case per rule. Numbers by each locale's
// separators (ambiguous forms refused, never guessed), dates in each locale's layouts and
// relative words, phones without `+` in the contact's country, and the locale an answer is
// read in when the node names none.
import { describe, expect, it } from 'vitest';
import { answerLocale, parseDate, parseNumber, parsePhone } from '#server/apis/messaging/automation/answers.js';

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
