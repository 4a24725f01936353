// What the pages of a browser context report while a test drives them: console errors and
// warnings, uncaught page errors, and every URL requested (to check none leaves the origin).
import type { BrowserContext, Page } from 'playwright-core';

export function watchContext(context: BrowserContext): { problems: string[]; requests: string[] } {
  const problems: string[] = [];
  const requests: string[] = [];
  context.on('page', (page: Page) => {
    page.on('console', (m) => (m.type() === 'error' || m.type() === 'warning') && problems.push(`${m.type()}: ${m.text()} (${page.url()})`));
    page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
    page.on('request', (r) => requests.push(r.url()));
  });
  return { problems, requests };
}
