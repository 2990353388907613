/**
 * The layers and their direction (docs/architecture.md). `npm run lint` fails on any rule here.
 *   core ← lib ← db ← ledger ← rails ← modules (services) ← http ← routes, dashboard ← app ← main, cli
 */
const LOWER = '^src/(core|lib|db|ledger|rails)/';

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'An import circle (type-only ones included) makes load order and layering meaningless.',
      from: {},
      to: { circular: true },
    },
    {
      name: 'core-is-the-bottom',
      severity: 'error',
      comment: 'core/ holds what every layer shares; it imports nothing of ours.',
      from: { path: '^src/core/' },
      to: { path: '^src/', pathNot: '^src/core/' },
    },
    {
      name: 'lower-layers-stay-low',
      severity: 'error',
      comment: 'lib, db, ledger and rails never reach up into http, modules, dashboard, workers or the app.',
      from: { path: LOWER },
      to: { path: '^src/(http|modules|dashboard|workers|app\\.ts|main\\.ts|cli\\.ts|runtime\\.ts)' },
    },
    {
      name: 'lib-below-db',
      severity: 'error',
      from: { path: '^src/lib/' },
      to: { path: '^src/(db|ledger|rails)/' },
    },
    {
      name: 'db-below-ledger',
      severity: 'error',
      from: { path: '^src/db/' },
      to: { path: '^src/(ledger|rails)/' },
    },
    {
      name: 'ledger-below-rails',
      severity: 'error',
      from: { path: '^src/ledger/' },
      to: { path: '^src/rails/' },
    },
    {
      name: 'http-knows-no-module',
      severity: 'error',
      comment: 'http/ is the framework layer: modules plug into it, never the other way round.',
      from: { path: '^src/http/' },
      to: { path: '^src/(modules|dashboard|workers)/' },
    },
    {
      name: 'services-know-no-http',
      severity: 'error',
      comment: 'Only routes (and hosted pages) speak HTTP; services, repos and workers take plain values.',
      from: { path: '^src/modules/', pathNot: '(routes|hosted|checkout)\\.ts$' },
      to: { path: '^src/http/' },
    },
    {
      name: 'modules-meet-through-services',
      severity: 'error',
      comment: 'A module reaches another only through its service.ts (types from its schema.ts are fine).',
      from: { path: '^src/modules/([^/]+)/' },
      to: {
        path: '^src/modules/([^/]+)/',
        pathNot: ['^src/modules/$1/', '^src/modules/[^/]+/(service|schema)\\.ts$'],
      },
    },
    {
      name: 'nothing-imports-the-app',
      severity: 'error',
      comment: 'app.ts wires everything; only entry points and tests start it.',
      from: { path: '^src/', pathNot: '^src/(main|cli)\\.ts$' },
      to: { path: '^src/app\\.ts$' },
    },
    {
      name: 'no-importing-entry-points',
      severity: 'error',
      from: {},
      to: { path: '^src/(main|cli)\\.ts$' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '\\.test\\.ts$' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default'] },
  },
};
