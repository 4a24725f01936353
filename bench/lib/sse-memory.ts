// Memory of open login streams: the server's RSS growth while N streams are open, scaled to
// 10,000 streams. Sessions are started first (their rows are not counted), then streams opened.
import { readFileSync } from 'node:fs';
import { Agent } from 'undici';
import type { LoginTarget } from './login-push.js';

/** The server's RSS after it collected garbage (bench/servers/login.ts answers SIGUSR2 so). */
async function settledRss(pid: number): Promise<number> {
  // The heap left by start-up and seeding is given back over several collections: sample until
  // two readings a second apart differ by under 2 MB (at most 8 times).
  let last = Number.NaN;
  for (let i = 0; i < 8; i++) {
    process.kill(pid, 'SIGUSR2');
    await new Promise((r) => setTimeout(r, 1000));
    const rss = rssBytes(pid);
    if (Math.abs(rss - last) < 2 * 2 ** 20) return rss;
    last = rss;
  }
  return last;
}

export function rssBytes(pid: number): number {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? Number(match[1]) * 1024 : NaN;
}

export async function measureStreamMemory(target: LoginTarget, serverPid: number, streams: number) {
  const sessions: { sessionId: string; subscribeToken: string }[] = [];
  for (let i = 0; i < streams; i++) {
    const res = await fetch(`${target.entryUrl}/v1/auth/chatapp/start`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': target.apiKey }, body: '{}' });
    if (res.status !== 201) throw new Error(`start answered ${res.status}`);
    sessions.push(await res.json());
  }
  const before = await settledRss(serverPid);
  const dispatcher = new Agent({ connections: null, pipelining: 0 });
  const open = [];
  for (const s of sessions) {
    const res = await fetch(`${target.streamUrl}/v1/auth/chatapp/events/${s.sessionId}?token=${encodeURIComponent(s.subscribeToken)}`, { dispatcher } as RequestInit);
    if (res.status !== 200) throw new Error(`stream answered ${res.status}`);
    open.push(res);
  }
  await new Promise((r) => setTimeout(r, 1000));
  const after = await settledRss(serverPid);
  for (const res of open) await res.body?.cancel();
  await dispatcher.close();
  // RSS that fell while the streams were open (the collector or PGlite's WebAssembly memory gave
  // back more than the streams took) measures nothing: the figure is then NaN, not a huge ratio.
  const growth = after > before ? after - before : Number.NaN;
  return { streams, rssBeforeBytes: before, rssAfterBytes: after, growthBytes: growth, bytesPerStream: growth / streams, scaledTo10kBytes: (growth / streams) * 10_000 };
}
