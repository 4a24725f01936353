// The CSV import of new contacts that `bench:scale` and `bench/bulk-io.ts` time: a file of `rows`
// Dutch mobile numbers that no earlier run imported (the block starts at the clock), each with a
// name, an email, two tags and a city, posted to the import endpoint.

/** The CSV text of `rows` new contacts. */
export function newContactsCsv(rows: number): string {
  const stamp = Date.now().toString(36);
  const base = Date.now() % 9_000_000;
  const lines = ['contact_no,name,email,tags,city'];
  for (let i = 0; i < rows; i++) lines.push(`+3162${String(base + i).padStart(7, '0')},Imported ${i} ${stamp},imp${i}@example.nl,"import,nl",Utrecht`);
  return `${lines.join('\n')}\n`;
}

/** Posts `file` as a contacts import with `key`; answers the job's id (the import runs after the 202). */
export async function startContactImport(url: string, key: string, file: string): Promise<string> {
  const form = new FormData();
  form.append('file', new Blob([file], { type: 'text/csv' }), 'contacts.csv');
  const res = await fetch(`${url}/api/contacts/imports`, { method: 'POST', headers: { 'x-api-key': key }, body: form });
  const job = (await res.json()) as { id: string };
  if (res.status !== 202) throw new Error(`import: ${res.status} ${JSON.stringify(job)}`);
  return job.id;
}
