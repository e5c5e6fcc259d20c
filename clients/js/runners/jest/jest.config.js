// jest config for the runner examples. The package is ESM, so jest runs with
// Node's VM modules and no transform; from clients/js:
//   node --experimental-vm-modules node_modules/jest/bin/jest.js --config runners/jest/jest.config.js replay.test.js
// regression.test.js fails on purpose (test/runners.test.js checks how).
export default {
  rootDir: '.',
  testMatch: ['<rootDir>/*.test.js'],
  testEnvironment: 'node',
  transform: {},
  watchman: false,
};
