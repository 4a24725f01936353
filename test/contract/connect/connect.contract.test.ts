// The connect contract: every example in generated/connect/openapi.3.1.yaml against the mock and the server.
import { contractSuite } from '../suite.js';

contractSuite('connect');
