// Phone numbers in E.164, whatever layout they came in (`+1 555-010-0202`, `15550100202`):
// parsed by libphonenumber-js; a number it cannot take as valid is a 400 naming the field.
import { parsePhoneNumberFromString } from 'libphonenumber-js/min';
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
