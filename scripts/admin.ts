/**
 * `npm run admin -- <command> [--flag value ...]`: operator tasks against the configured
 * database (same VIDMILL_* settings as the server). USAGE below lists the commands; `--help`
 * prints it. Every command first names the database it uses on stderr, and refuses to run on
 * an SQLite file that does not exist (a wrong data directory would otherwise create an empty
 * database and answer TEAM_NOT_FOUND).
 */
import { parseArgs } from 'node:util';
import { loadConfig } from '../src/config';
import { createServices } from '../src/composition';
import { existsSync } from 'node:fs';
import { describeDatabase, migrateToLatest, openDatabase } from '../src/db/database';
import { loadMasterKey } from '../src/security/secret-box';
import { systemClock } from '../src/shared/clock';
import { createBlobStore } from '../src/storage/create-blob-store';
import { DomainError } from '../src/shared/errors';
import { generatePassword } from '../src/security/passwords';
import { usdToMicros } from '../src/features/billing';

const USAGE = `usage: npm run admin -- <command> [--flag value ...]
Runs against the database the VIDMILL_* settings name (VIDMILL_DATA_DIR, VIDMILL_DATABASE_URL), as the server does.

Users and teams:
  list-teams                                     every team: id, name, billing type, members
  list-users                                     every user: id, e-mail, teams
  create-user     --email E [--password P] [--name N] [--team-name T]   user with an own team
  create-team     --name N [--owner-email E] [--billing-type WALLET|CLOUD_MARKETPLACE] [--api-enabled true|false]
  add-member      --team-id ID --email E [--role member|owner]
  update-team     --team-id ID [--name N] [--billing-type ...] [--api-enabled true|false]
                  [--free-clip true|false]       whether video in makes the free 10-second clip (default true)
  reset-password  --email E [--password P]       (also clears a sign-in lock)
  sweep-api-keys                                 delete keys unused for 90 days now

Billing (every action appends a ledger or history row; nothing is edited in place):
  top-up             --team-id ID --amount-usd N [--reason R]            CREDITS_BOUGHT on the processing balance
  adjust             --team-id ID --amount-usd=[-]N --reason R [--balance processing|utilities]
                     [--type MANUAL_ADJUSTMENT|UTILITIES_INVOICE_PAID|PROCESSED_VIDEO_COMPUTE_SAVING|OTHER]
  set-billing-type   --team-id ID --billing-type WALLET|CLOUD_MARKETPLACE [--reason R]
  link-agreement     --team-id ID --agreement-id A --license-id L --offer-id O --product-id P
                     --product-name N --buyer-account-id B --seller-account-id S   (a CLOUD_MARKETPLACE team only)
  agreement-status   --agreement-id A --status SUBSCRIBED|UNSUBSCRIBE_PENDING|UNSUBSCRIBED [--note T]
  replace-agreement  --agreement-id A --new-agreement-id A2 [--offer-id O] [--note T]
  reassign-agreement --agreement-id A --new-agreement-id A2 --team-id ID [--note T]   (to a CLOUD_MARKETPLACE team only)
  roll-billing-periods                           close ended months, open new periods now

Webhooks:
  rotate-webhook-key                             publish the next signing key now; it signs after
                                                 VIDMILL_WEBHOOK_KEY_PUBLISH_AHEAD_MINUTES, then the old one keeps its grace period

More in docs/operations.md.`;

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
function usd(v: string | undefined, flag: string): number {
  const text = required(v, flag);
  if (!/^-?\d+(\.\d{1,6})?$/.test(text)) throw new Error(`--${flag} must be a USD amount with at most 6 decimals`);
  return usdToMicros(Number(text));
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
      'free-clip': { type: 'string' },
      role: { type: 'string' },
      'amount-usd': { type: 'string' },
      reason: { type: 'string' },
      balance: { type: 'string' },
      type: { type: 'string' },
      'agreement-id': { type: 'string' },
      'new-agreement-id': { type: 'string' },
      'license-id': { type: 'string' },
      'offer-id': { type: 'string' },
      'product-id': { type: 'string' },
      'product-name': { type: 'string' },
      'buyer-account-id': { type: 'string' },
      'seller-account-id': { type: 'string' },
      status: { type: 'string' },
      note: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  const command = positionals[0];
  if (values.help || command === 'help') {
    console.log(USAGE);
    return;
  }
  if (!command) throw new Error(USAGE);

  const config = loadConfig();
  process.stderr.write(`database: ${describeDatabase(config.database)}\n`);
  if (config.database.client === 'sqlite' && !existsSync(config.database.filename)) {
    throw new Error(
      `no database at ${config.database.filename}; the admin commands do not create one.\n` +
        'Run them with the VIDMILL_DATA_DIR (or VIDMILL_DATABASE_URL) the server uses, or start the server once (npm start) to create the database.',
    );
  }
  const db = openDatabase(config.database);
  try {
    await migrateToLatest(db);
    const masterKey = loadMasterKey({ configured: config.masterKey, dataDir: config.dataDir, embedded: config.database.client === 'sqlite' });
    const s = createServices({ db, clock: systemClock, masterKey, blobs: createBlobStore(config.storage), config });
    switch (command) {
      case 'list-teams':
        for (const t of await s.accounts.listTeams()) {
          console.log(JSON.stringify({ teamId: t.id, name: t.name, billingType: t.billingType, apiEnabled: t.apiEnabled, members: t.members }));
        }
        break;
      case 'list-users':
        for (const u of await s.accounts.listUsers()) {
          const locked = u.lockedUntil && u.lockedUntil > new Date() ? { lockedUntil: u.lockedUntil.toISOString() } : {};
          console.log(JSON.stringify({ userId: u.id, email: u.email, name: u.name, ...locked, teams: u.teams }));
        }
        break;
      case 'create-user': {
        const email = required(values.email, 'email');
        const password = values.password ?? generatePassword();
        const { user, team } = await s.accounts.createUserWithTeam({
          email,
          password,
          name: values.name ?? email.split('@')[0]!,
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
        const teamId = required(values['team-id'], 'team-id');
        await s.accounts.updateTeam(teamId, { name: values.name, apiEnabled: bool(values['api-enabled']) });
        const freeClip = bool(values['free-clip']);
        if (freeClip !== undefined) await s.ingestion.setFreeClipEnabled(teamId, freeClip);
        // A billing-type switch is recorded in the team's billing-type history.
        const type = billingType(values['billing-type']);
        if (type) await s.ledger.switchBillingType(teamId, type, values.reason ?? 'admin update-team');
        console.log('updated');
        break;
      }
      case 'top-up': {
        await s.ledger.topUp(required(values['team-id'], 'team-id'), usd(values['amount-usd'], 'amount-usd'), values.reason);
        console.log('topped up');
        break;
      }
      case 'adjust': {
        const balance = values.balance ?? 'processing';
        if (balance !== 'processing' && balance !== 'utilities') throw new Error('--balance must be processing or utilities');
        const type = values.type ?? 'MANUAL_ADJUSTMENT';
        if (!['MANUAL_ADJUSTMENT', 'UTILITIES_INVOICE_PAID', 'PROCESSED_VIDEO_COMPUTE_SAVING', 'OTHER'].includes(type)) {
          throw new Error('--type must be MANUAL_ADJUSTMENT, UTILITIES_INVOICE_PAID, PROCESSED_VIDEO_COMPUTE_SAVING or OTHER');
        }
        await s.ledger.adjust(required(values['team-id'], 'team-id'), {
          amountMicros: usd(values['amount-usd'], 'amount-usd'),
          adjustmentType: type as 'MANUAL_ADJUSTMENT',
          reason: required(values.reason, 'reason'),
          balance,
        });
        console.log('adjusted');
        break;
      }
      case 'set-billing-type': {
        const type = billingType(required(values['billing-type'], 'billing-type'))!;
        await s.ledger.switchBillingType(required(values['team-id'], 'team-id'), type, values.reason);
        console.log(`billing type ${type}`);
        break;
      }
      case 'link-agreement': {
        const a = await s.billing.linkAgreement({
          teamId: required(values['team-id'], 'team-id'),
          agreementId: required(values['agreement-id'], 'agreement-id'),
          licenseId: required(values['license-id'], 'license-id'),
          offerId: required(values['offer-id'], 'offer-id'),
          productId: required(values['product-id'], 'product-id'),
          productName: required(values['product-name'], 'product-name'),
          buyerAccountId: required(values['buyer-account-id'], 'buyer-account-id'),
          sellerAccountId: required(values['seller-account-id'], 'seller-account-id'),
        });
        console.log(JSON.stringify({ agreementId: a.agreementId, teamId: a.teamId, status: a.status }));
        break;
      }
      case 'agreement-status': {
        const status = required(values.status, 'status');
        if (status !== 'SUBSCRIBED' && status !== 'UNSUBSCRIBE_PENDING' && status !== 'UNSUBSCRIBED') {
          throw new Error('--status must be SUBSCRIBED, UNSUBSCRIBE_PENDING or UNSUBSCRIBED');
        }
        const a = await s.billing.recordAgreementChange({ kind: 'status', agreementId: required(values['agreement-id'], 'agreement-id'), status, note: values.note });
        console.log(JSON.stringify({ agreementId: a.agreementId, status: a.status }));
        break;
      }
      case 'replace-agreement': {
        const a = await s.billing.recordAgreementChange({
          kind: 'replace',
          agreementId: required(values['agreement-id'], 'agreement-id'),
          newAgreementId: required(values['new-agreement-id'], 'new-agreement-id'),
          offerId: values['offer-id'],
          note: values.note,
        });
        console.log(JSON.stringify({ agreementId: a.agreementId, replacesAgreementId: a.replacesAgreementId, status: a.status }));
        break;
      }
      case 'reassign-agreement': {
        const a = await s.billing.recordAgreementChange({
          kind: 'reassign',
          agreementId: required(values['agreement-id'], 'agreement-id'),
          newAgreementId: required(values['new-agreement-id'], 'new-agreement-id'),
          toTeamId: required(values['team-id'], 'team-id'),
          note: values.note,
        });
        console.log(JSON.stringify({ agreementId: a.agreementId, teamId: a.teamId, reassignedFromAgreementId: a.reassignedFromAgreementId }));
        break;
      }
      case 'roll-billing-periods':
        console.log(JSON.stringify(await s.ledger.rollPeriods()));
        break;
      case 'reset-password': {
        const password = await s.accounts.resetPassword(required(values.email, 'email'), values.password);
        console.log(values.password ? 'password set' : `new password: ${password}`);
        break;
      }
      case 'sweep-api-keys':
        console.log(`deleted ${await s.apiKeys.sweepIdleKeys()} API keys unused for 90 days`);
        break;
      case 'rotate-webhook-key': {
        const { key, activatesAt, alreadyPending } = await s.signingKeys.rotate();
        console.log(
          alreadyPending
            ? `webhook signing key ${key.id} is already published; it signs from ${activatesAt.toISOString()}`
            : `new webhook signing key ${key.id} published; it signs from ${activatesAt.toISOString()}`,
        );
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
