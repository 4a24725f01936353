// Every example in the generated documents is valid against the schema it illustrates.
import { describe, expect, it } from 'vitest';
import { checkExamples } from '../../scripts/check-examples.mjs';
import { loadDocument } from '../contract/cases.js';

describe('spec examples', () => {
  for (const api of ['account', 'connect', 'login', 'messaging']) {
    it(`${api}: every example is valid and every operation has success and error examples`, () => {
      expect(checkExamples(loadDocument(api))).toEqual([]);
    });
  }
});
