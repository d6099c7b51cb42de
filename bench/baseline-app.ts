/**
 * Baseline for `npm run bench -- api`: the least an Express 5 + express-openapi-validator +
 * better-sqlite3 (or `pg`) server can do to answer GET /api/v1/projects with the same ProjectsPage
 * JSON. No auth, no rate limit, no request id, no access log, no Knex. On PostgreSQL one `pg` pool
 * (10 connections, as Vidmill's Knex pool) and one plain parameterised query per request. Request validation runs against
 * the same generated/openapi.json with the same options as src/http/app.ts, so the validator's
 * cost is on both sides of the ratio. Response validation is off unless
 * BASELINE_VALIDATE_RESPONSES=1 (the real app validates responses too, logging mismatches).
 *
 * Env: BASELINE_PORT, BASELINE_DB (SQLite file with a `projects` table shaped like Vidmill's) or
 * BASELINE_PG_URL (a PostgreSQL database with Vidmill's `projects` table).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import express from 'express';
import * as OpenApiValidator from 'express-openapi-validator';
import { Pool } from 'pg';

const port = Number(process.env.BASELINE_PORT ?? 8090);
const dbFile = process.env.BASELINE_DB;
const pgUrl = process.env.BASELINE_PG_URL;
if (!dbFile && !pgUrl) throw new Error('BASELINE_DB or BASELINE_PG_URL is required');
const validateResponses = process.env.BASELINE_VALIDATE_RESPONSES === '1';

const contract = JSON.parse(readFileSync(path.resolve(__dirname, '..', 'generated', 'openapi.json'), 'utf8'));
const db = dbFile ? new Database(dbFile, { readonly: true }) : undefined;
const pool = pgUrl ? new Pool({ connectionString: pgUrl, max: 10 }) : undefined;

const SORT = { createdAt: 'created_at', updatedAt: 'updated_at' } as const;
const statements = new Map<string, Database.Statement>();
function pageStatement(sortBy: keyof typeof SORT, dir: 'asc' | 'desc'): Database.Statement {
  const key = `${sortBy}:${dir}`;
  let stmt = statements.get(key);
  if (!stmt) {
    stmt = db!.prepare(`select *, count(*) over () as total_count from projects order by ${SORT[sortBy]} ${dir}, id ${dir} limit ? offset ?`);
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
/** The page's rows (with `total_count`) and the total. */
async function page(sortBy: keyof typeof SORT, dir: 'asc' | 'desc', limit: number, offset: number): Promise<{ rows: any[]; total: number }> {
  if (db) {
    const rows = pageStatement(sortBy, dir).all(limit, offset) as any[];
    return { rows, total: rows.length ? Number(rows[0].total_count) : (db.prepare('select count(*) as n from projects').get() as { n: number }).n };
  }
  const { rows } = await pool!.query(`select *, count(*) over () as total_count from projects order by ${SORT[sortBy]} ${dir}, id ${dir} limit $1 offset $2`, [limit, offset]);
  return { rows, total: rows.length ? Number(rows[0].total_count) : Number((await pool!.query('select count(*) as n from projects')).rows[0].n) };
}

api.get('/v1/projects', async (req, res) => {
  const q = req.query as { pageNumber?: number; pageSize?: number; sortDirection?: string; sortBy?: string };
  const pageNumber = Number(q.pageNumber ?? 0);
  const pageSize = Number(q.pageSize ?? 10);
  const dir = q.sortDirection === 'DESC' ? 'desc' : 'asc';
  const sortBy = q.sortBy === 'updatedAt' ? 'updatedAt' : 'createdAt';
  const { rows, total } = await page(sortBy, dir, pageSize, pageNumber * pageSize);
  res.json({
    pageNumber,
    pageSize,
    numberOfElements: rows.length,
    totalPages: Math.ceil(total / pageSize),
    totalElements: total,
    items: rows.map((r) => ({
      id: r.id,
      createdAt: (r.created_at instanceof Date ? r.created_at : new Date(Number(r.created_at))).toISOString(),
      updatedAt: (r.updated_at instanceof Date ? r.updated_at : new Date(Number(r.updated_at))).toISOString(),
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
