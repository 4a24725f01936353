// The one normaliser of what customers type, shared by every matcher of inbound text: opt-out
// and opt-in keywords, flow keyword triggers, message-bot keywords, sequence keywords and the
// LOGIN message. Phones differ in what they send for the same word: full-width or compatibility
// letters (NFKC folds them), invisible format characters inserted by keyboards and copy-paste
// (zero-width space and joiners, word joiner, BOM, soft hyphen, bidi marks: Unicode category Cf,
// dropped), and every kind of space (no-break, narrow, ideographic, tabs, line breaks: one plain
// space). Keywords are further compared without case and accents.

/** Format characters (Cf): zero-width space and joiners, word joiner, BOM, soft hyphen, bidi marks. */
const FORMAT = /\p{Cf}/gu;
/** Every Unicode space (Zs), tabs, line breaks and the line and paragraph separators. */
const SPACE = /[\p{Zs}\t\n\v\f\r\u0085\u2028\u2029]/gu;
/** Punctuation, symbols and spaces around a keyword ("Stop!", "« STOP »"). */
const AROUND = /^[ \p{P}\p{S}]+|[ \p{P}\p{S}]+$/gu;

/**
 * The text as phones send it, made comparable: NFKC, format characters dropped, every kind of
 * space a plain space. Case, accents and letters of other scripts are left as they are.
 */
export function typedText(text: string): string {
  return text.normalize('NFKC').replace(FORMAT, '').replace(SPACE, ' ');
}

/** typedText with accents (combining marks) dropped and case folded (upper case: ß → SS). */
export function foldedText(text: string): string {
  return typedText(text)
    .normalize('NFD')
    .replace(/\p{M}+/gu, '')
    .normalize('NFC')
    .toUpperCase();
}

/**
 * A keyword or a whole message as keywords are compared: folded (foldedText), surrounding
 * punctuation, symbols and spaces removed, inner runs of spaces one space.
 */
export function normalizeKeyword(text: string): string {
  return foldedText(text).replace(AROUND, '').replace(/ {2,}/g, ' ');
}

/** The same as normalizeKeyword, keeping case and accents (a case-sensitive flow trigger). */
export function normalizeKeywordKeepingCase(text: string): string {
  return typedText(text)
    .normalize('NFC')
    .replace(/^ +| +$/g, '')
    .replace(/ {2,}/g, ' ');
}
