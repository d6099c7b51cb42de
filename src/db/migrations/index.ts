/**
 * Migrations, in order. A migration never changes after it lands; add a new one instead.
 * Listed explicitly (not read from a folder) so they run the same under tsx, tests and builds.
 */
import type { Knex } from 'knex';
import * as m001 from './001_identity_projects_locations';
import * as m002 from './002_webhooks';
import * as m003 from './003_billing';
import * as m004 from './004_jobs';
import * as m005 from './005_videos';
import * as m006 from './006_video_processing_state';
import * as m007 from './007_processing';
import * as m008 from './008_video_out';
import * as m009 from './009_idempotency_keys';
import * as m010 from './010_processing_applied_options';
import * as m011 from './011_webhook_key_activation';
import * as m012 from './012_storage_billing';
import * as m013 from './013_stage_error_messages';
import * as m014 from './014_stage_eta';
import * as m015 from './015_webhook_listeners';
import * as m016 from './016_upload_sessions';
import * as m017 from './017_processing_segments';
import * as m018 from './018_unlogged_rate_limits';

const migrations: Record<string, Knex.Migration> = {
  '001_identity_projects_locations': m001,
  '002_webhooks': m002,
  '003_billing': m003,
  '004_jobs': m004,
  '005_videos': m005,
  '006_video_processing_state': m006,
  '007_processing': m007,
  '008_video_out': m008,
  '009_idempotency_keys': m009,
  '010_processing_applied_options': m010,
  '011_webhook_key_activation': m011,
  '012_storage_billing': m012,
  '013_stage_error_messages': m013,
  '014_stage_eta': m014,
  '015_webhook_listeners': m015,
  '016_upload_sessions': m016,
  '017_processing_segments': m017,
  '018_unlogged_rate_limits': m018,
};

export const migrationSource: Knex.MigrationSource<string> = {
  getMigrations: async () => Object.keys(migrations),
  getMigrationName: (name) => name,
  getMigration: async (name) => {
    const migration = migrations[name];
    if (!migration) throw new Error(`unknown migration ${name}`);
    return migration;
  },
};
