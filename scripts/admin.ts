/**
 * `npm run admin -- <command> [--flag value ...]`: operator tasks against the configured
 * database (same VIDMILL_* settings as the server).
 *
 *   create-user     --email E [--password P] [--name N] [--team-name T]   user with an own team
 *   create-team     --name N [--owner-email E] [--billing-type WALLET|CLOUD_MARKETPLACE] [--api-enabled true|false]
 *   add-member      --team-id ID --email E [--role member|owner]
 *   update-team     --team-id ID [--name N] [--billing-type ...] [--api-enabled true|false]
 *   reset-password  --email E [--password P]       (also clears a sign-in lock)
 *   sweep-api-keys                                 delete keys unused for 90 days now
 *   rotate-webhook-key                             new webhook signing key now; the old one keeps its grace period
 */
import { parseArgs } from 'node:util';
import { loadConfig } from '../src/config';
import { createServices } from '../src/composition';
import { migrateToLatest, openDatabase } from '../src/db/database';
import { loadMasterKey } from '../src/security/secret-box';
import { systemClock } from '../src/shared/clock';
import { DomainError } from '../src/shared/errors';
import { generatePassword } from '../src/security/passwords';

const USAGE = `usage: npm run admin -- <create-user|create-team|add-member|update-team|reset-password|sweep-api-keys|rotate-webhook-key> [--flags]
see the header of scripts/admin.ts or docs/operations.md`;

function billingType(v: string | undefined): 'WALLET' | 'CLOUD_MARKETPLACE' | undefined {
  if (v === undefined) return undefined;
  if (v !== 'WALLET' && v !== 'CLOUD_MARKETPLACE') throw new Error('--billing-type must be WALLET or CLOUD_MARKETPLACE');
  return v;
}
function bool(v: string | undefined): boolean | undefined {
  if (v === undefined) return undefined;
  if (v !== 'true' && v !== 'false') throw new Error('expected true or false');
  return v === 'true';
}
function required(v: string | undefined, flag: string): string {
  if (!v) throw new Error(`--${flag} is required`);
  return v;
}

async function main(): Promise<void> {
  const { positionals, values } = parseArgs({
    allowPositionals: true,
    options: {
      email: { type: 'string' },
      password: { type: 'string' },
      name: { type: 'string' },
      'team-name': { type: 'string' },
      'team-id': { type: 'string' },
      'owner-email': { type: 'string' },
      'billing-type': { type: 'string' },
      'api-enabled': { type: 'string' },
      role: { type: 'string' },
    },
  });
  const command = positionals[0];
  if (!command) throw new Error(USAGE);

  const config = loadConfig();
  const db = openDatabase(config.database);
  try {
    await migrateToLatest(db);
    const masterKey = loadMasterKey({ configured: config.masterKey, dataDir: config.dataDir, embedded: config.database.client === 'sqlite' });
    const s = createServices({ db, clock: systemClock, masterKey, config });
    switch (command) {
      case 'create-user': {
        const email = required(values.email, 'email');
        const password = values.password ?? generatePassword();
        const { user, team } = await s.accounts.createUserWithTeam({
          email,
          password,
          name: values.name ?? email.split('@')[0],
          teamName: values['team-name'] ?? `${email.split('@')[0]}'s team`,
        });
        console.log(JSON.stringify({ userId: user.id, teamId: team.id, email, ...(values.password ? {} : { password }) }));
        break;
      }
      case 'create-team': {
        const team = await s.accounts.createTeam({
          name: required(values.name, 'name'),
          ownerEmail: values['owner-email'],
          billingType: billingType(values['billing-type']),
          apiEnabled: bool(values['api-enabled']),
        });
        console.log(JSON.stringify({ teamId: team.id, name: team.name, billingType: team.billingType }));
        break;
      }
      case 'add-member': {
        const role = values.role ?? 'member';
        if (role !== 'member' && role !== 'owner') throw new Error('--role must be member or owner');
        await s.accounts.addMember(required(values['team-id'], 'team-id'), required(values.email, 'email'), role);
        console.log('added');
        break;
      }
      case 'update-team': {
        await s.accounts.updateTeam(required(values['team-id'], 'team-id'), {
          name: values.name,
          billingType: billingType(values['billing-type']),
          apiEnabled: bool(values['api-enabled']),
        });
        console.log('updated');
        break;
      }
      case 'reset-password': {
        const password = await s.accounts.resetPassword(required(values.email, 'email'), values.password);
        console.log(values.password ? 'password set' : `new password: ${password}`);
        break;
      }
      case 'sweep-api-keys':
        console.log(`deleted ${await s.apiKeys.sweepIdleKeys()} API keys unused for 90 days`);
        break;
      case 'rotate-webhook-key': {
        const key = await s.signingKeys.rotate();
        console.log(`new webhook signing key ${key.id}`);
        break;
      }
      default:
        throw new Error(`unknown command ${command}\n${USAGE}`);
    }
  } finally {
    await db.destroy();
  }
}

main().catch((err) => {
  console.error(err instanceof DomainError ? `${err.errorCode}: ${err.message}` : err instanceof Error ? err.message : err);
  process.exit(1);
});
