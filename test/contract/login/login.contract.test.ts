// The login contract: every example in generated/login/openapi.3.1.yaml against the mock and the server.
import { contractSuite } from '../suite.js';

contractSuite('login');
