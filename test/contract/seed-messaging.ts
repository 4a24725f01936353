// Messaging data for the contract suite on the server under test (a connected sandbox account).
/** Extra credentials by security scheme name, for a workspace whose owner token is `owner`. */
export async function seedMessaging(_base: string, _owner: string): Promise<Record<string, string>> {
  return {};
}
