// `npm run storage:migrate`: copies the stored files of DATA_DIR into the bucket of STORAGE_URL
// (docs/deploy.md, "From one instance to a fleet"), verifying each by its SHA-256, and prints
// what it did. Exits 1 if any copy does not read back identical. Safe to run again (files already
// copied are verified and skipped) and while the old instance still serves.
import { type Config, ConfigError, loadConfig } from './config.js';
import { DiskStorage } from './lib/storage/disk.js';
import { openStorage } from './lib/storage/index.js';
import { migrateStorage } from './lib/storage/migrate.js';

const COMMAND = 'npm run storage:migrate';

async function main(): Promise<number> {
  let config: Config;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(error.message);
      return 2;
    }
    throw error;
  }
  if (!config.storageUrl) {
    console.error(`${COMMAND}: set STORAGE_URL to the bucket to copy into (s3://bucket/prefix), and DATA_DIR to the directory to copy from.`);
    return 2;
  }
  const source = new DiskStorage(config.dataDir);
  const target = await openStorage(config);
  try {
    await target.ping();
    console.log(`Copying the files of ${config.dataDir} to ${target.location} ...`);
    const report = await migrateStorage(source, target, (key, outcome) => {
      if (outcome === 'failed') console.error(`  ${key}: the copy does not read back with the same SHA-256`);
    });
    console.log(`copied ${report.copied} (${report.bytes} bytes), already there and verified ${report.present}, failed ${report.failed.length}`);
    return report.failed.length ? 1 : 0;
  } finally {
    await target.close();
  }
}

main().then(
  (code) => process.exit(code),
  (error) => {
    console.error(`${COMMAND}: ${(error as Error).message}`);
    process.exit(1);
  },
);
