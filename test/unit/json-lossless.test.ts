// Large integers read digit for digit; everything else as JSON.parse reads it.
import { describe, expect, it } from 'vitest';
import { parseJsonLossless } from '#server/lib/json-lossless.js';

describe('parseJsonLossless', () => {
  it('keeps integers beyond 2^53 as their digits, safe ones as numbers', () => {
    expect(parseJsonLossless('{"id":820982911946154508,"n":42,"neg":-9007199254740993,"max":9007199254740991}')).toEqual({
      id: '820982911946154508',
      n: 42,
      neg: '-9007199254740993',
      max: 9007199254740991,
    });
  });

  it('leaves strings, fractions and exponents alone', () => {
    const text = '{"s":"820982911946154508 \\" 12345678901234567890","f":12345678901234567890.5,"e":1e400,"a":[1,2.5,"x"],"t":true,"z":null}';
    expect(parseJsonLossless(text)).toEqual(JSON.parse(text));
  });

  it('refuses what JSON.parse refuses', () => {
    expect(() => parseJsonLossless('{"a":01}')).toThrow();
    expect(() => parseJsonLossless('{"a":')).toThrow();
  });
});
