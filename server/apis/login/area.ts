// Login: apps, sessions, their event streams, LOGIN messages, verification tokens, the expiry sweep.
import type { Area } from '../area.js';
import { loginHandlers } from './handlers.js';
import { startLogin } from './verification.js';

export const loginArea: Area = { name: 'login', handlers: { login: loginHandlers }, plugin: startLogin };
