// The APIs we publish: their folder under generated/, their TypeSpec service and the service
// that declares the events they send (merged into the 3.1 document's `webhooks:`).
export const APIS = [
  { name: 'account', service: 'AccountApi', webhooks: null },
  { name: 'connect', service: 'ConnectApi', webhooks: 'ConnectWebhooks' },
  { name: 'login', service: 'LoginApi', webhooks: 'LoginWebhooks' },
  { name: 'messaging', service: 'MessagingApi', webhooks: 'MessagingWebhooks' },
];
