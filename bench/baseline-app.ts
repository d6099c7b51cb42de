/**
 * Baseline for `npm run bench -- api`: the least an Express 5 + express-openapi-validator +
 * better-sqlite3 server can do to answer GET /api/v1/projects with the same ProjectsPage JSON.
 * No auth, no rate limit, no request id, no access log, no Knex. Request validation runs against
 * the same generated/openapi.json with the same options as src/http/app.ts, so the validator's
 * cost is on both sides of the ratio. Response validation is off unless
 * BASELINE_VALIDATE_RESPONSES=1 (the real app validates responses too, logging mismatches).
 *
 * Env: BASELINE_PORT, BASELINE_DB (SQLite file with a `projects` table shaped like Vidmill's).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import express from 'express';
import * as OpenApiValidator from 'express-openapi-validator';

const port = Number(process.env.BASELINE_PORT ?? 8090);
const dbFile = process.env.BASELINE_DB;
if (!dbFile) throw new Error('BASELINE_DB is required');
const validateResponses = process.env.BASELINE_VALIDATE_RESPONSES === '1';

const contract = JSON.parse(readFileSync(path.resolve(__dirname, '..', 'generated', 'openapi.json'), 'utf8'));
const db = new Database(dbFile, { readonly: true });

const SORT = { createdAt: 'created_at', updatedAt: 'updated_at' } as const;
const statements = new Map<string, Database.Statement>();
function pageStatement(sortBy: keyof typeof SORT, dir: 'asc' | 'desc'): Database.Statement {
  const key = `${sortBy}:${dir}`;
  let stmt = statements.get(key);
  if (!stmt) {
    stmt = db.prepare(`select *, count(*) over () as total_count from projects order by ${SORT[sortBy]} ${dir}, id ${dir} limit ? offset ?`);
    statements.set(key, stmt);
  }
  return stmt;
}

const app = express();
app.disable('x-powered-by');
app.set('query parser', 'extended');
app.get('/healthz', (_req, res) => {
  res.json({ status: 'ok' });
});

const api = express.Router();
api.use(
  OpenApiValidator.middleware({
    apiSpec: contract,
    validateApiSpec: false,
    validateRequests: { allowUnknownQueryParameters: false, coerceTypes: true },
    validateResponses: validateResponses ? { removeAdditional: false } : false,
    validateSecurity: false,
    validateFormats: true,
    ignoreUndocumented: false,
  }),
);
api.get('/v1/projects', (req, res) => {
  const q = req.query as { pageNumber?: number; pageSize?: number; sortDirection?: string; sortBy?: string };
  const pageNumber = Number(q.pageNumber ?? 0);
  const pageSize = Number(q.pageSize ?? 10);
  const dir = q.sortDirection === 'DESC' ? 'desc' : 'asc';
  const sortBy = q.sortBy === 'updatedAt' ? 'updatedAt' : 'createdAt';
  const rows = pageStatement(sortBy, dir).all(pageSize, pageNumber * pageSize) as any[];
  const total = rows.length ? Number(rows[0].total_count) : (db.prepare('select count(*) as n from projects').get() as { n: number }).n;
  res.json({
    pageNumber,
    pageSize,
    numberOfElements: rows.length,
    totalPages: Math.ceil(total / pageSize),
    totalElements: total,
    items: rows.map((r) => ({
      id: r.id,
      createdAt: new Date(Number(r.created_at)).toISOString(),
      updatedAt: new Date(Number(r.updated_at)).toISOString(),
      name: r.name,
      isSample: r.is_sample === 1 || r.is_sample === true,
      teamId: r.team_id,
    })),
  });
});
api.use((err: any, _req: express.Request, res: express.Response, _next: express.NextFunction) => {
  res.status(err.status ?? 500).json({ message: err.message, errors: err.errors });
});
app.use('/api', api);

const server = app.listen(port, '127.0.0.1', () => {
  process.stdout.write(`baseline listening on ${port}\n`);
});
const stop = () => server.close(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
