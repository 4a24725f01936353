// The messaging contract: every example in generated/messaging/openapi.3.1.yaml against the mock and the server.
import { contractSuite } from '../suite.js';

contractSuite('messaging');
