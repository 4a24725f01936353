// The pure parts of the bots: normalisation, keyword matching (no regular expressions), the
// similarity index, and schedule windows in a time zone (once per period, across midnight and DST).
import { describe, expect, it } from 'vitest';
import { samePeriod, scheduleApplies, isTimeZone } from '#server/apis/messaging/bots/schedule.js';
import { editDistance, keywordMatches, normalise, questionKey, SimilarityIndex } from '#server/apis/messaging/bots/text-match.js';
import type { MessageBotScheduleRow } from '#server/store/schema/bots.js';

describe('text matching', () => {
  it('normalises case, accents and punctuation', () => {
    expect(normalise('  Öffnungszeiten?! Café—MENÜ ')).toBe('offnungszeiten cafe menu');
    expect(questionKey('What are your opening hours?')).toBe('opening hours');
  });

  it('keywords: exact, contains as whole words, starts_with; never a substring of a word', () => {
    expect(keywordMatches('Prices!', 'prices', 'exact')).toBe(true);
    expect(keywordMatches('prices please', 'prices', 'exact')).toBe(false);
    expect(keywordMatches('send me the price list please', 'price list', 'contains')).toBe(true);
    expect(keywordMatches('priceless', 'price', 'contains')).toBe(false);
    expect(keywordMatches('Menu of today', 'menu', 'starts_with')).toBe(true);
    expect(keywordMatches('the menu', 'menu', 'starts_with')).toBe(false);
  });

  it('a keyword that looks like a pattern is compared literally and stays fast', () => {
    const evil = '(a+)+$';
    const started = performance.now();
    expect(keywordMatches(`${'a'.repeat(5000)}!`, evil, 'contains')).toBe(false);
    expect(performance.now() - started).toBeLessThan(200);
  });

  it('edit distance with transpositions, bounded', () => {
    expect(editDistance('opne', 'open', 1)).toBe(1);
    expect(editDistance('wen', 'when', 1)).toBe(1);
    expect(editDistance('hours', 'house', 1)).toBe(Infinity);
  });

  it('similarity: exact phrasing scores 1, a rephrasing answers, an unrelated text scores low', () => {
    const index = new SimilarityIndex([
      { text: 'What are your opening hours?', item: 'hours' },
      { text: 'When are you open?', item: 'hours' },
      { text: 'Do you accept insurance?', item: 'insurance' },
    ]);
    expect(index.best('when are you open')).toMatchObject({ item: 'hours', score: 1 });
    expect(index.best('which insurance do you accept')!.item).toBe('insurance');
    expect(index.best('opning hours')!.score).toBeGreaterThan(0.6);
    expect(index.best('my cat is sick')!.score).toBeLessThan(0.3);
    expect(index.best('?!')).toBeUndefined();
  });
});

const OFFICE: MessageBotScheduleRow = {
  timezone: 'Europe/Berlin',
  windows: [{ days: ['mon', 'tue', 'wed', 'thu', 'fri'], start: '08:00', end: '18:00' }],
  reply_when: 'outside',
};

describe('schedules', () => {
  it('IANA time zones are checked by the runtime', () => {
    expect(isTimeZone('Europe/Berlin')).toBe(true);
    expect(isTimeZone('Mars/Olympus_Mons')).toBe(false);
  });

  it('outside office hours in Berlin, in winter (UTC+1) and summer (UTC+2)', () => {
    expect(scheduleApplies(OFFICE, new Date('2026-11-23T06:59:00Z'))).toBe(true); // Mon 07:59 local
    expect(scheduleApplies(OFFICE, new Date('2026-11-23T07:00:00Z'))).toBe(false); // Mon 08:00
    expect(scheduleApplies(OFFICE, new Date('2026-07-13T06:00:00Z'))).toBe(false); // Mon 08:00 in summer
    expect(scheduleApplies(OFFICE, new Date('2026-11-22T12:00:00Z'))).toBe(true); // Sunday
  });

  it('a window past midnight belongs to the day it starts', () => {
    const night: MessageBotScheduleRow = { timezone: 'UTC', windows: [{ days: ['fri'], start: '22:00', end: '02:00' }], reply_when: 'inside' };
    expect(scheduleApplies(night, new Date('2026-11-27T23:00:00Z'))).toBe(true); // Fri 23:00
    expect(scheduleApplies(night, new Date('2026-11-28T01:59:00Z'))).toBe(true); // Sat 01:59
    expect(scheduleApplies(night, new Date('2026-11-28T02:00:00Z'))).toBe(false);
    expect(scheduleApplies(night, new Date('2026-11-26T23:00:00Z'))).toBe(false); // Thu
  });

  it('one period per closed night: same period overnight, a new one after the office was open', () => {
    expect(samePeriod(OFFICE, new Date('2026-11-23T18:00:00Z'), new Date('2026-11-24T05:00:00Z'))).toBe(true); // Mon 19:00 → Tue 06:00
    expect(samePeriod(OFFICE, new Date('2026-11-23T18:00:00Z'), new Date('2026-11-24T18:00:00Z'))).toBe(false); // → Tue 19:00
    expect(samePeriod(OFFICE, new Date('2026-11-20T18:00:00Z'), new Date('2026-11-23T05:00:00Z'))).toBe(true); // Fri evening → Mon morning
    expect(samePeriod(OFFICE, new Date('2026-11-01T18:00:00Z'), new Date('2026-11-23T05:00:00Z'))).toBe(false); // weeks apart
  });
});
