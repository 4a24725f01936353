// The TypeScript clients of the Account, Connect, Login and Messaging APIs, and their helpers.
export * from './core.js';
export * from './problems.js';
export * from './account.js';
export * from './connect.js';
export * from './login.js';
export * from './messaging.js';
export * from './webhooks.js';
export * from './oauth.js';
export * from './login-stream.js';
