import { openStore } from '#server/store/db.js';
const t = performance.now();
const s = await openStore({ databaseUrl: process.argv[2] });
await s.close();
console.log('migrated in', ((performance.now() - t) / 1000).toFixed(1), 's');
