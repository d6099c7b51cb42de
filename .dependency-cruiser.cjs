/**
 * Import boundaries of src/, and of test/, bench/ and scripts/ towards the features
 * (docs/architecture.md draws them). `npm test` runs
 * `npm run lint:boundaries`, so a change that breaks one fails the suite.
 */
const LAYERS = '^src/(http|db|jobs|storage|net|media|processing-planner|security|shared)/';
module.exports = {
  forbidden: [
    {
      name: 'no-cycles',
      severity: 'error',
      comment:
        'Modules import each other in one direction only. A type-only import is erased when compiled, so it may point back (a job definition in <feature>.jobs.ts names the type of the service that enqueues it); every import that runs may not.',
      from: { path: '^src/' },
      to: { circular: true, viaOnly: { dependencyTypesNot: ['type-only'] } },
    },
    {
      name: 'features-only-through-their-index',
      severity: 'error',
      comment: "A feature's index.ts is its only public face: other features and the composition root import nothing else of it.",
      from: { path: '^src/features/([^/]+)/|^src/[^/]+[.]ts$' },
      to: { path: '^src/features/([^/]+)/.+', pathNot: ['^src/features/$1/', '^src/features/[^/]+/index[.]ts$'] },
    },
    {
      name: 'outside-src-features-only-through-their-index-or-testing',
      severity: 'error',
      comment:
        'Tests, benchmarks and scripts use a feature through its face (index.ts) or its test support entry (testing.ts: the narrow reads and seeds tests need, by name), never another of its modules.',
      from: { path: '^(test|bench|scripts)/' },
      to: { path: '^src/features/[^/]+/.+', pathNot: '^src/features/[^/]+/(index|testing)[.]ts$' },
    },
    {
      name: 'testing-entries-only-outside-src',
      severity: 'error',
      comment: "A feature's testing.ts serves test/, bench/ and scripts/ only: nothing in src/, its own feature included, imports it.",
      from: { path: '^src/' },
      to: { path: '^src/features/[^/]+/testing[.]ts$' },
    },
    {
      name: 'layers-never-import-features',
      severity: 'error',
      comment: 'The technical layers serve every feature and know none of them.',
      from: { path: LAYERS },
      to: { path: '^src/features/' },
    },
    {
      name: 'layers-never-import-the-composition-root',
      severity: 'error',
      from: { path: '^src/(features|http|db|jobs|storage|net|media|processing-planner|security|shared)/' },
      to: { path: '^src/(composition|main|config)[.]ts$' },
    },
    {
      name: 'not-to-unresolvable',
      severity: 'error',
      from: { path: '^src/' },
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsConfig: { fileName: 'tsconfig.json' },
    tsPreCompilationDeps: true,
    exclude: { path: '^(generated|node_modules|dist)/' },
  },
};
