// Connect credentials for the contract suite on the server under test (a ConnectOAuth bearer).
/** Extra credentials by security scheme name, for a workspace whose owner token is `owner`. */
export async function seedConnect(_base: string, _owner: string): Promise<Record<string, string>> {
  return {};
}
