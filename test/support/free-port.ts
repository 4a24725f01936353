// A port on 127.0.0.1 that nothing listens on right now (for servers that must know their URL
// before they listen, and for benchmarks that start Prism on a port of their choosing).
import { createServer } from 'node:net';

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}
