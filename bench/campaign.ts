// `npm run bench:campaign [-- --recipients N --rate R]`: the campaign benchmark alone (100,000
// recipients at 1,000 messages per second by default), on the embedded store, and on PostgreSQL
// too when BENCH_DATABASE_URL names a server (a database is created for the run and dropped).
import { parseArgs } from 'node:util';
import { measureCampaign, withBenchDatabase } from './lib/campaign.js';

const { values } = parseArgs({ options: { recipients: { type: 'string', default: '100000' }, rate: { type: 'string', default: '1000' } } });
const recipients = Number(values.recipients);
const rate = Number(values.rate);
if (!Number.isInteger(recipients) || recipients < 2 || !Number.isInteger(rate) || rate < 1 || rate > 1000) {
  console.error('--recipients must be an integer ≥ 2 and --rate an integer from 1 to 1000');
  process.exit(2);
}
const report = (store: string, f: Awaited<ReturnType<typeof measureCampaign>>) => {
  console.log(JSON.stringify({ store, ...f }));
  console.log(`ratio campaign_rate_${store} ${(f.achievedPerSecond / f.configuredPerSecond).toFixed(3)}`);
  console.log(
    `memory campaign_rss_peak_${store}_mib ${(f.rssPeakBytes / 2 ** 20).toFixed(0)} (before the campaign ${(f.rssBeforeBytes / 2 ** 20).toFixed(0)})`,
  );
};
report('pglite', await measureCampaign(recipients, rate));
const adminUrl = process.env.BENCH_DATABASE_URL;
if (adminUrl) report('postgres', await withBenchDatabase(adminUrl, (url) => measureCampaign(recipients, rate, { DATABASE_URL: url })));
