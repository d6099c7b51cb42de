// @ts-check
/**
 * ESLint (flat config): typescript-eslint's type-checked recommended rules over src/, scripts/,
 * bench/ and test/. Formatting is prettier's (`.prettierrc.json`), so eslint-config-prettier turns
 * off every stylistic rule that could disagree with it. Import boundaries are dependency-cruiser's
 * (`npm run lint:boundaries`, `.dependency-cruiser.cjs`), not ESLint's.
 */
import js from '@eslint/js';
import prettier from 'eslint-config-prettier';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['generated/**', 'sdk/src/generated/**', 'sdk/dist/**', 'node_modules/**', 'data/**', '.bench/**', 'dist/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { project: './tsconfig.json', tsconfigRootDir: import.meta.dirname },
    },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      // An `async` method without `await` is how an implementation of a Promise-returning
      // interface (BlobStore.close, a handler) keeps its throws as rejections: allowed.
      '@typescript-eslint/require-await': 'off',
      // `_`-prefixed parameters and destructured leftovers are deliberate ("unused on purpose").
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrorsIgnorePattern: '^_', ignoreRestSiblings: true }],
    },
  },
  {
    // No module in src changes a dependency's internals at run time (issue 28): a fix that belongs
    // in a dependency is a declared patch in patches/ (patch-package, applied at install, named
    // with its upstream issue in patches/README.md), visible in package.json and loud on upgrade.
    // test/unit/dependency-patches.test.ts checks that each declared patch is applied.
    files: ['src/**/*.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector: "AssignmentExpression > MemberExpression.left[object.type='MemberExpression'][object.property.name='prototype']",
          message: "Do not assign to a prototype's members (a run-time patch of a dependency): carry the fix as a declared patch in patches/ (patch-package).",
        },
        {
          selector: "CallExpression[callee.name='createRequire']",
          message: "Do not load a dependency's own module instances to change them: carry the fix as a declared patch in patches/ (patch-package).",
        },
        {
          selector: "ImportDeclaration[importKind!='type'][source.value=/^(@[^/]+\\/)?[^./@][^/]*\\/(dist|lib|src|build)\\//]",
          message: "Do not import a dependency's internal modules (only its types): use its public entry points.",
        },
        {
          selector: "CallExpression[callee.name='require'][arguments.0.value=/^(@[^/]+\\/)?[^./@][^/]*\\/(dist|lib|src|build)\\//]",
          message: "Do not require a dependency's internal modules: use its public entry points.",
        },
        {
          selector:
            "CallExpression[callee.object.name='Object'][callee.property.name=/^(defineProperty|defineProperties|setPrototypeOf|assign)$/] > MemberExpression.arguments:first-child[property.name='prototype']",
          message: 'Do not change a prototype (a run-time patch of a dependency): carry the fix as a declared patch in patches/ (patch-package).',
        },
      ],
    },
  },
  {
    // Tests, benchmarks and scripts read untyped JSON: supertest's `Response.body`, OpenAPI
    // documents walked generically (scripts/contract.ts, the mock server), autocannon and
    // ffprobe output. Typing each read would add casts, not checks. The `any` rules hold in src/;
    // the other type-checked rules (floating and misused promises, unbound methods, ...) hold
    // everywhere.
    files: ['test/**/*.ts', 'bench/**/*.ts', 'scripts/**/*.ts'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
    },
  },
  {
    // A test's wall-clock bound is a hang detector for a quiet machine, scaled to the runner's
    // load: `this.timeout(scaled(ms))` (test/helpers/timeouts.ts), never a bare number.
    files: ['test/**/*.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector: "CallExpression[callee.object.type='ThisExpression'][callee.property.name='timeout'] > :not(CallExpression[callee.name='scaled']).arguments",
          message: "Write a test's timeout as this.timeout(scaled(ms)) (test/helpers/timeouts.ts): it is scaled to the load of the run.",
        },
      ],
    },
  },
  {
    // One way per concern (issue 26), as a rule of its own so that it adds to no-restricted-syntax
    // blocks instead of replacing them. Jobs: declared only with defineJob in a feature's
    // <feature>.jobs.ts and enqueued only through the definition (typed payload, its kind and
    // attempts); src/jobs/ alone calls the queue's raw enqueue. Abort controllers: made by
    // sharedAbortController (src/shared/abort.ts). After-commit: only
    // src/db/after-commit.ts reads a Knex transaction's executionPromise. Errors: a client's error
    // is one of the DomainError subclasses, never a DomainError built with a bare status.
    // Transactions: opened with a TransactionalService's this.transactional(fn); the free
    // transactional(db, fn) and db.transaction() only in src/db/ and src/jobs/.
    files: ['src/**/*.ts'],
    plugins: { vidmill: { rules: { 'one-way': oneWayRule() } } },
    rules: { 'vidmill/one-way': 'error' },
  },
  {
    // Configuration files in JavaScript: not in tsconfig.json's program.
    files: ['**/*.{js,cjs,mjs}'],
    extends: [tseslint.configs.disableTypeChecked],
    languageOptions: { globals: { module: 'writable', require: 'readonly', process: 'readonly', __dirname: 'readonly' } },
  },
  prettier,
);

/**
 * vidmill/one-way: the syntax that bypasses the one way of a concern, reported where the one way's
 * own module is not the file being linted.
 * @returns {import('eslint').Rule.RuleModule}
 */
function oneWayRule() {
  /** @type {{ selector: string, allowedIn: RegExp, message: string }[]} */
  const checks = [
    {
      selector: "CallExpression[callee.property.name='enqueue'] > ObjectExpression.arguments:has(> Property[key.name='kind'])",
      allowedIn: /\/src\/jobs\//,
      message: "Enqueue through the job's definition (JOB.enqueue(queue, trx, payload), from defineJob in <feature>.jobs.ts), not with a kind spelled out.",
    },
    {
      selector: "CallExpression[callee.name='defineJob']",
      allowedIn: /\/src\/features\/[^/]+\/[^/]+\.jobs\.ts$/,
      message: "A job is defined in its feature's <feature>.jobs.ts.",
    },
    {
      selector: "ObjectExpression:has(> Property[key.name='kind']):has(> Property[key.name='attempts']):not(CallExpression[callee.name='defineJob'] > ObjectExpression)",
      allowedIn: /\/src\/jobs\//,
      message: 'A job kind and its attempts are declared with defineJob, not as a loose constant.',
    },
    {
      selector: "NewExpression[callee.name='DomainError']",
      allowedIn: /\/src\/shared\/errors\.ts$/,
      message: 'Throw one of the DomainError subclasses of src/shared/errors.ts (BadRequestError, ConflictError, TooManyRequestsError, ...): the status comes with the class.',
    },
    {
      selector: "NewExpression[callee.name='AbortController']",
      allowedIn: /\/src\/shared\/abort\.ts$/,
      message: "Make it with sharedAbortController() (src/shared/abort.ts): its signal is shared by the operations in flight, one listener each, without Node's false memory-leak warning past ten.",
    },
    {
      selector: "MemberExpression[property.name='executionPromise']",
      allowedIn: /\/src\/db\/after-commit\.ts$/,
      message: "Run effects after commit with afterCommit (src/db/after-commit.ts): a transaction's own promise settles at a savepoint's release, before the outer commit.",
    },
    {
      // The free transactional(db, fn) (imported under another name or with its module as a
      // namespace, too) and Knex's own db.transaction() / db.transactionProvider(). The one way is
      // this.transactional(fn), a member call on `this`, which none of these selectors matches.
      selector: [
        "CallExpression[callee.name='transactional']",
        "ImportSpecifier[imported.name='transactional'][local.name!='transactional']",
        'ImportDeclaration[source.value=/\\/db\\/transactional$/] > ImportNamespaceSpecifier',
        'CallExpression[callee.property.name=/^(transaction|transactionProvider)$/]',
      ].join(', '),
      allowedIn: /\/src\/(db|jobs)\//,
      message:
        'Open a transaction with this.transactional(fn) in a TransactionalService (src/db/transactional.ts); a caller holding a transaction passes it on (stores, helpers) or binds the service with within(trx). Only src/db/ and src/jobs/ call transactional(db, fn) or db.transaction().',
    },
  ];
  return {
    meta: { type: 'problem', schema: [] },
    create(context) {
      const file = context.filename.replace(/\\/g, '/');
      /** @type {Record<string, (node: import('estree').Node) => void>} */
      const visitors = {};
      for (const check of checks) {
        if (check.allowedIn.test(file)) continue;
        visitors[check.selector] = (node) => context.report({ node, message: check.message });
      }
      return visitors;
    },
  };
}
