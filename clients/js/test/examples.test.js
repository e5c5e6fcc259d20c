// Runs the examples with the tests (node --test clients/js/test/).
import '../examples/agent.test.js';
