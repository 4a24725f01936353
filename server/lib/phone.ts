// Phone numbers in E.164, whatever layout they came in (`+1 555-010-0202`, `15550100202`):
// parsed by libphonenumber-js; a number it cannot take as valid is a 400 naming the field.
import { type CountryCode, isSupportedCountry, parsePhoneNumberFromString } from 'libphonenumber-js/min';
import { HttpProblem } from './problems.js';

/** The contract's E164 (spec/common/ids.tsp): `+` and 8–15 digits. */
export const E164 = /^\+[1-9][0-9]{7,14}$/;

/** A WhatsApp id as the provider sends it: the contract's E164 without `+`. */
export const WA_ID = /^[1-9]\d{7,14}$/;

/** E.164 of `input`, or null when it is not a valid number. Digits without `+` are read as international. */
export function toE164(input: string): string | null {
  const text = input.trim();
  if (!/^\+?[0-9 ().-]{4,32}$/.test(text)) return null;
  const parsed = parsePhoneNumberFromString(text.startsWith('+') ? text : `+${text}`);
  // Possible (right length for its country), not "valid": the 555-01xx test range Meta and the
  // sandbox use is assigned to no one, and real new ranges reach libphonenumber's data late.
  // And 8–15 digits, as the contract's E164 says: libphonenumber deems a few 7-digit numbers
  // possible (`+2710508`), which no answer could then carry.
  return parsed?.isPossible() && E164.test(parsed.number) ? parsed.number : null;
}

/** E.164 of `input`, or a 400 validation problem pointing at `pointer`. */
export function requireE164(input: string, pointer: string): string {
  const e164 = toE164(input);
  if (!e164)
    throw new HttpProblem(400, 'validation', 'A phone number is invalid.', {
      errors: [{ pointer, detail: 'is not a valid phone number (E.164, e.g. +15550100202)' }],
    });
  return e164;
}

/**
 * Ranges assigned to no one and kept for tests and fiction, taken as valid so Meta's test
 * business numbers and the sandbox keep working: the NANP area code 555 (Meta's test numbers),
 * NANP 555-0100…0199 lines in any area code, and the UK's drama range 07700 900000…900999.
 */
const TEST_RANGES = [/^\+1555\d{7}$/, /^\+1[2-9]\d{2}5550[1]\d{2}$/, /^\+447700900\d{3}$/];

export function isTestRange(e164: string): boolean {
  return TEST_RANGES.some((range) => range.test(e164));
}

/** The country of an E.164 number (the owner of its test range for those), or null. */
export function countryOfNumber(e164: string | null | undefined): CountryCode | null {
  if (!e164) return null;
  const parsed = parsePhoneNumberFromString(e164);
  if (parsed?.country) return parsed.country;
  if (/^\+1555/.test(e164) || /^\+1\d{3}5550/.test(e164)) return 'US';
  if (/^\+447700900/.test(e164)) return 'GB';
  return null;
}

/** An ISO 3166-1 alpha-2 code libphonenumber knows (upper case), or null. */
export function phoneCountry(code: string | null | undefined): CountryCode | null {
  const upper = code?.trim().toUpperCase() ?? '';
  return /^[A-Z]{2}$/.test(upper) && isSupportedCountry(upper) ? upper : null;
}

export type PhoneReading = { ok: true; e164: string } | { ok: false; reason: string };

/**
 * A number as a person writes it, in E.164, only when it is *valid* (assigned to a kind of line
 * in its country by libphonenumber's data, or in a test range): a merely "possible" one
 * (`+10301234567`) would store a number nobody has.
 * - With `+` or an international prefix the country's people dial (`00`, `011`): as written.
 * - Otherwise, with a `country`: a national number of that country (`617 555 9008` in US is
 *   +16175559008; `030 1234567` in DE is +49301234567), else international digits
 *   (`4915112345678`), when those are valid.
 * - Without a country: international digits.
 */
export function readPhone(input: string, country: CountryCode | null): PhoneReading {
  const text = input.trim();
  if (!/^\+?[0-9 ().\-/]{4,32}$/.test(text)) return { ok: false, reason: 'is not a phone number' };
  const valid = (n: ReturnType<typeof parsePhoneNumberFromString>) => (n && E164.test(n.number) && (n.isValid() || isTestRange(n.number)) ? n.number : null);
  if (text.startsWith('+')) {
    const e164 = valid(parsePhoneNumberFromString(text));
    return e164 ? { ok: true, e164 } : { ok: false, reason: 'is not a valid phone number' };
  }
  // `00` is the international prefix of most countries; with a country, libphonenumber knows its own (`011`).
  const digits = text.replace(/\D/g, '').replace(/^00(?=[1-9])/, '');
  const national = country ? valid(parsePhoneNumberFromString(text, country)) : null;
  const international = digits.startsWith('0') ? null : valid(parsePhoneNumberFromString(`+${digits}`));
  const e164 = national ?? international;
  if (e164) return { ok: true, e164 };
  return {
    ok: false,
    reason: country ? `is not a valid phone number in ${country} nor in international form` : 'is not a valid phone number in international form',
  };
}

/** `readPhone`, or a 400 validation problem pointing at `pointer`. */
export function requirePhone(input: string, country: CountryCode | null, pointer: string): string {
  const read = readPhone(input, country);
  if (!read.ok)
    throw new HttpProblem(400, 'validation', 'A phone number is invalid.', {
      errors: [{ pointer, detail: `${read.reason} (write it with + and the country code, e.g. +15550100202)` }],
    });
  return read.e164;
}
