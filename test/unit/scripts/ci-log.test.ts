// scripts/lib/ci-log.mjs: schemathesis's pytest-style frames are echoed without the `=` frame,
// so CI's log reader does not take them for a pytest run that executed no test.
import { describe, expect, it } from 'vitest';
import { unframe, unframedLines } from '../../../scripts/lib/ci-log.mjs';

describe('unframe', () => {
  it('keeps the title of a framed line and drops its frame', () => {
    expect(unframe('============================= 2 warnings in 7.38s ==============================')).toBe('-- 2 warnings in 7.38s --');
    expect(unframe('=================================== SUMMARY ====================================')).toBe('-- SUMMARY --');
    expect(unframe('===== No issues found in 93.10s =====')).toBe('-- No issues found in 93.10s --');
  });

  it('leaves every other line as it is', () => {
    for (const line of ['  361 generated, 361 passed, 15 skipped', '== account: st run …', '=====', 'a == b ==', '', '     ✅ 8 passed']) {
      expect(unframe(line)).toBe(line);
    }
  });
});

describe('unframedLines', () => {
  it('prints whole lines however the chunks split them, and the unterminated last one on end()', () => {
    const printed: string[] = [];
    const echo = unframedLines((line: string) => printed.push(line));
    echo.write('Seed: 1\n\n=====');
    echo.write('= 3 warnings in 1.00s ==');
    expect(printed).toEqual(['Seed: 1', '']);
    echo.write('===\ntail');
    echo.end();
    expect(printed).toEqual(['Seed: 1', '', '-- 3 warnings in 1.00s --', 'tail']);
  });
});
