// Every flow of every industry pack, run as a customer would run it: once through testFlow (the
// dry run) and once live (sandbox inbound messages, a Portuguese customer), with the same
// messages. Both must take the same path and send the same texts, including the `invalid`
// branches: a customer who writes "around 300k" is asked again, then told what happens next.
// Also: every pack `ask` has retry text and an `invalid` branch that sends something.
import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildShared } from '#test/helper.js';
import { sendFromSandboxPhone } from '#server/apis/messaging/sandbox-phone/phone.js';
import { eventually } from '#test/support/eventually.js';
import { api, executions, outbound, workspace } from '../automation/support.js';

type Node = { id: string; type: string; parameters: Record<string, unknown> };
type Flow = { key: string; name: string; nodes: Node[]; connections: { from_node: string; from_port?: string; to_node: string }[] };
type Pack = { slug: string; flows: Flow[] };

const PACKS: Pack[] = ['dental-clinic', 'real-estate', 'restaurant'].map((slug) =>
  JSON.parse(readFileSync(new URL(`../../../../server/apis/messaging/packs/data/${slug}.json`, import.meta.url), 'utf8')),
);
const VARIABLES = { company_name: 'Casa Lisboa', city: 'Porto' };

/** What the customer writes: the message that starts the flow, then each reply. */
const SCENARIOS: { slug: string; flow: string; title: string; trigger: string; replies: string[]; texts: RegExp[]; fields?: Record<string, unknown> }[] = [
  { slug: 'dental-clinic', flow: 'welcome', title: 'greets a new patient', trigger: 'Olá', replies: [], texts: [/^Welcome/] },
  { slug: 'dental-clinic', flow: 'appointment_request', title: 'a day in words', trigger: 'I want to book', replies: ['amanhã'], texts: [/Which day/, /./] },
  {
    slug: 'dental-clinic',
    flow: 'appointment_request',
    title: 'no day after two retries',
    trigger: 'I want to book',
    replies: ['whenever', 'not sure', 'dunno'],
    texts: [/Which day/, /could not read a day in that/, /could not read a day in that/, /someone from Casa Lisboa will contact you/],
  },
  {
    slug: 'real-estate',
    flow: 'lead_qualification',
    title: 'a budget with Portuguese separators',
    trigger: 'Bom dia',
    replies: ['250.000', 'Baixa'],
    texts: [/^Welcome/, /budget/, /area/, /Thank you/],
    fields: { budget: 250000, preferred_area: 'Baixa' },
  },
  {
    slug: 'real-estate',
    flow: 'lead_qualification',
    title: '"around 300k" asked again, then the invalid branch says something',
    trigger: 'Bom dia',
    replies: ['around 300k', 'a lot', 'maybe 300k', 'Baixa'],
    texts: [/^Welcome/, /budget/, /as a number/, /as a number/, /go through your budget/, /area/, /Thank you/],
  },
  { slug: 'real-estate', flow: 'viewing_request', title: 'a relative day', trigger: 'viewing please', replies: ['next friday'], texts: [/visit/, /./] },
  {
    slug: 'restaurant',
    flow: 'reservation_request',
    title: 'a party size',
    trigger: 'a table please',
    replies: ['4'],
    texts: [/how many/, /table for 4/],
    fields: { party_size: 4 },
  },
  {
    slug: 'restaurant',
    flow: 'reservation_request',
    title: 'no party size',
    trigger: 'a table please',
    replies: ['many', 'lots', 'a crowd'],
    texts: [/how many/, /number of people/, /number of people/, /did not get the number of people/],
  },
  { slug: 'restaurant', flow: 'opening_hours_answer', title: 'opening hours', trigger: 'when are you open', replies: [], texts: [/./] },
];

let app: FastifyInstance;
beforeAll(async () => {
  app = await buildShared();
});

describe('pack ask nodes', () => {
  for (const pack of PACKS)
    for (const flow of pack.flows)
      for (const ask of flow.nodes.filter((n) => n.type === 'ask'))
        it(`${pack.slug}/${flow.key}/${ask.id}: retry text, and an invalid branch that sends a message`, () => {
          expect(String(ask.parameters.retry_text ?? '')).not.toBe('');
          const invalid = flow.connections.find((c) => c.from_node === ask.id && c.from_port === 'invalid');
          expect(invalid, 'an invalid connection').toBeDefined();
          expect(flow.nodes.find((n) => n.id === invalid!.to_node)?.type).toBe('send_text');
        });

  it('every pack flow has a scenario here', () => {
    const covered = new Set(SCENARIOS.map((s) => `${s.slug}/${s.flow}`));
    expect(PACKS.flatMap((p) => p.flows.map((f) => `${p.slug}/${f.key}`)).filter((k) => !covered.has(k))).toEqual([]);
  });
});

let seq = 0;
/**
 * How long a live step may take before the case gives up: a hang detector. Each wait is woken by
 * the app's events; under the full suite on a busy machine a step took more than the 10 s alone
 * ever needs.
 */
const WAIT_MS = 60_000;

describe('testFlow and the live run agree on every pack flow', () => {
  for (const s of SCENARIOS)
    it(`${s.slug}/${s.flow}: ${s.title}`, async () => {
      const w = await workspace(app);
      const call = api(app, w.key);
      const applied = await call('POST', '/api/industry-packs/apply', { slug: s.slug, waba_id: w.accountId, variables: VARIABLES });
      expect(applied.statusCode, applied.body).toBe(200);
      const name = PACKS.find((p) => p.slug === s.slug)!.flows.find((f) => f.key === s.flow)!.name;
      const flow = await app.platform.store.db
        .selectFrom('automation_flows')
        .select('id')
        .where('workspace_id', '=', w.workspaceId)
        .where('name', '=', name)
        .executeTakeFirstOrThrow();
      expect((await call('PATCH', `/api/automation/${flow.id}/toggle`, { active: true })).statusCode).toBe(200);
      const phone = `+35191200${String(++seq).padStart(4, '0')}`;

      const dry = await call('POST', `/api/automation/${flow.id}/test`, {
        message: { type: 'text', text: s.trigger },
        contact: { name: 'Inês', contact_no: phone },
        replies: s.replies.map((text) => ({ type: 'text', text })),
      });
      expect(dry.statusCode, dry.body).toBe(200);
      const test = dry.json();
      expect(test).toMatchObject({ outcome: 'completed', error: null });
      const dryTexts = test.messages.map((m: { preview: string }) => m.preview);
      expect(dryTexts).toHaveLength(s.texts.length);
      s.texts.forEach((pattern, i) => expect(dryTexts[i]).toMatch(pattern));

      // Live: each message waits until the previous one has been acted on (a step or a send) and
      // the run has settled: waiting at an ask, or ended. A step alone was not enough: the trigger's
      // step is written before the run reaches its ask, and a reply sent then found no run waiting
      // for it (the inbound message was not a reply to anything), so the run waited at its ask for
      // ever. Under the full test:pg run that is how "the run to end" timed out.
      const settled = async () => {
        const runs = await executions(app, flow.id);
        return runs.length > 0 && runs.every((e) => e.status !== 'running');
      };
      const progress = async () => {
        const runs = await executions(app, flow.id);
        const steps = runs.length
          ? await app.platform.store.db.selectFrom('automation_steps').select('id').where('execution_id', '=', runs[0]!.id).execute()
          : [];
        return steps.length + (await outbound(app, phone)).length;
      };
      for (const text of [s.trigger, ...s.replies]) {
        const before = await progress();
        await sendFromSandboxPhone(app, { phoneNumberId: w.numberId, from: phone, name: 'Inês', text });
        await eventually(async () => (await progress()) > before && (await settled()), {
          within: WAIT_MS,
          what: `the run to act on "${text}" and settle`,
          app,
          every: 100,
        });
      }
      const run = await eventually(async () => (await executions(app, flow.id)).find((e) => e.status !== 'running' && e.status !== 'waiting'), {
        within: WAIT_MS,
        what: 'the run to end',
        app,
        every: 100,
      });
      expect(run).toMatchObject({ status: 'completed', error: null });
      const liveTexts = (await outbound(app, phone)).map((m) => (m.content as { text?: string }).text);
      expect(liveTexts).toEqual(dryTexts);
      const liveSteps = await app.platform.store.db
        .selectFrom('automation_steps')
        .select(['node_id', 'port', 'status'])
        .where('execution_id', '=', run.id)
        .orderBy('seq')
        .execute();
      const path = (steps: { node_id: string; port: string | null }[]) => steps.map((x) => `${x.node_id}:${x.port}`);
      // The dry run also lists the answers it asked again for (port null); the live run records where it went on.
      const dryPath = path(test.steps.filter((x: { node_id: string; port: string | null }) => x.port !== null || x.node_id === 'done'));
      expect(path(liveSteps.filter((x) => x.status !== 'waiting'))).toEqual(dryPath);
      if (s.fields) {
        const contact = await app.platform.store.db.selectFrom('contacts').select('custom_fields').where('id', '=', run.contact_id).executeTakeFirstOrThrow();
        expect(contact.custom_fields).toMatchObject(s.fields);
      }
    }, 180_000);
});
