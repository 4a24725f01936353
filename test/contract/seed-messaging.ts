// Messaging data for the contract suite on the server under test: a connected sandbox account
// (so configuration operations answer from a real account, with a number) and a few CRM rows
// (a custom field, a tag, a contact) that list and filter examples can match.
/** Extra credentials by security scheme name, for a workspace whose owner token is `owner`. */
export async function seedMessaging(base: string, owner: string): Promise<Record<string, string>> {
  const post = async (path: string, body: unknown) => {
    const res = await fetch(`${base}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${owner}` },
      body: JSON.stringify(body),
    });
    if (res.status !== 201) throw new Error(`seeding ${path} answered ${res.status}: ${await res.text()}`);
    return res.json();
  };
  await post('/api/chatapp/connections', { kind: 'sandbox', name: 'Contract sandbox' });
  await post('/api/custom-fields', { key: 'city', label: 'City', type: 'text' });
  await post('/api/tags', { name: 'vip', color: '#E4A11B' });
  await post('/api/contacts', { contact_no: '+49 151 1234 5678', name: 'Lena Fischer', tags: ['vip'], custom_fields: { city: 'Berlin' } });
  return {};
}
