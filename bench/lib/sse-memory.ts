// Memory of open login streams: the server's memory growth while N streams are open (the larger
// of its RSS growth and its live-memory growth), scaled to 10,000 streams. Sessions are started first (their rows are not counted), then streams opened.
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent } from 'undici';
import type { LoginTarget } from './login-push.js';

interface Reading {
  /** The server's RSS (/proc), a second after a full collection. */
  rss: number;
  /** Its live JavaScript memory right after that collection: heapUsed + external (buffers). */
  live: number;
}

/** The server's memory after it collected garbage (bench/servers/login.ts answers SIGUSR2 so). */
async function settled(pid: number): Promise<Reading> {
  // The heap left by start-up and seeding is given back over several collections: sample until
  // two RSS readings a second apart differ by under 2 MB (at most 8 times).
  let last = Number.NaN;
  for (let i = 0; i < 8; i++) {
    process.kill(pid, 'SIGUSR2');
    await new Promise((r) => setTimeout(r, 1000));
    const rss = rssBytes(pid);
    if (Math.abs(rss - last) < 2 * 2 ** 20) break;
    last = rss;
  }
  const usage = JSON.parse(readFileSync(join(tmpdir(), `bench-memory-${pid}.json`), 'utf8')) as NodeJS.MemoryUsage;
  return { rss: rssBytes(pid), live: usage.heapUsed + usage.external };
}

export function rssBytes(pid: number): number {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? Number(match[1]) * 1024 : NaN;
}

export async function measureStreamMemory(target: LoginTarget, serverPid: number, streams: number) {
  const sessions: { sessionId: string; subscribeToken: string }[] = [];
  for (let i = 0; i < streams; i++) {
    const res = await fetch(`${target.entryUrl}/v1/auth/chatapp/start`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': target.apiKey },
      body: '{}',
    });
    if (res.status !== 201) throw new Error(`start answered ${res.status}`);
    sessions.push(await res.json());
  }
  const before = await settled(serverPid);
  const dispatcher = new Agent({ connections: null, pipelining: 0 });
  const open = [];
  for (const s of sessions) {
    const res = await fetch(`${target.streamUrl}/v1/auth/chatapp/events/${s.sessionId}?token=${encodeURIComponent(s.subscribeToken)}`, {
      dispatcher,
    } as RequestInit);
    if (res.status !== 200) throw new Error(`stream answered ${res.status}`);
    open.push(res);
  }
  await new Promise((r) => setTimeout(r, 1000));
  const after = await settled(serverPid);
  for (const res of open) await res.body?.cancel();
  await dispatcher.close();
  // The growth is the larger of the RSS growth and the live-memory growth. RSS alone is noisy
  // here: the embedded database's WebAssembly memory makes it a 600 MB process, whose RSS moved by
  // ±50 MB between two settled readings (it fell while 2,000 streams opened), and live memory
  // (what the streams themselves hold) is a lower bound that a falling RSS cannot hide.
  const rssGrowth = after.rss - before.rss;
  const liveGrowth = after.live - before.live;
  const growth = Math.max(rssGrowth, liveGrowth);
  return {
    streams,
    rssBeforeBytes: before.rss,
    rssAfterBytes: after.rss,
    rssGrowthBytes: rssGrowth,
    liveBeforeBytes: before.live,
    liveAfterBytes: after.live,
    liveGrowthBytes: liveGrowth,
    growthBytes: growth,
    bytesPerStream: growth / streams,
    scaledTo10kBytes: (growth / streams) * 10_000,
  };
}
