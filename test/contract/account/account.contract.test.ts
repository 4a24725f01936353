// The account contract: every example in generated/account/openapi.3.1.yaml against the mock and the server.
import { contractSuite } from '../suite.js';

contractSuite('account');
