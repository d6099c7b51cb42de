/** SQL for processing appraisals: priced estimates that expire, accepted at most once. */
import type { Knex } from 'knex';
import { asDate, lockRowForUpdate } from '../../db/database';
import { DbInt, DbTimestamp, Nullable, rowMapper } from '../../db/store';

export interface AppraisalRecord {
  id: string;
  teamId: string;
  userId: string;
  sourceVideoId: string;
  /** The id the processed video gets when the appraisal is accepted. */
  videoId: string;
  configurationId?: string;
  /** The options as requested. */
  options: Record<string, unknown>;
  startMs: number;
  endMs: number;
  billingType: 'WALLET' | 'CLOUD_MARKETPLACE';
  /** The priced estimate (JobAppraisal). */
  appraisal: Record<string, unknown>;
  fileExtension: string;
  expiresAt: Date;
  acceptedVideoId?: string;
  createdAt: Date;
}

/** A row as the drivers return it (see src/db/store.ts). */
interface AppraisalRecordRow {
  appraisal_json: string;
  id: string;
  team_id: string;
  user_id: string;
  source_video_id: string;
  video_id: string;
  configuration_id: Nullable<string>;
  options_json: string;
  start_ms: DbInt;
  end_ms: DbInt;
  billing_type: AppraisalRecord['billingType'];
  expires_at: DbTimestamp;
  accepted_video_id: Nullable<string>;
  created_at: DbTimestamp;
}

function fromRow(r: AppraisalRecordRow): AppraisalRecord {
  const appraisal = JSON.parse(r.appraisal_json) as Pick<AppraisalRecord, 'appraisal' | 'fileExtension'>;
  return {
    id: r.id,
    teamId: r.team_id,
    userId: r.user_id,
    sourceVideoId: r.source_video_id,
    videoId: r.video_id,
    configurationId: r.configuration_id ?? undefined,
    options: JSON.parse(r.options_json) as AppraisalRecord['options'],
    startMs: Number(r.start_ms),
    endMs: Number(r.end_ms),
    billingType: r.billing_type,
    appraisal: appraisal.appraisal,
    fileExtension: appraisal.fileExtension,
    expiresAt: asDate(r.expires_at),
    acceptedVideoId: r.accepted_video_id ?? undefined,
    createdAt: asDate(r.created_at),
  };
}
const appraisalRecordRows = rowMapper(fromRow);

export const appraisalsStore = {
  async insert(db: Knex, a: AppraisalRecord): Promise<void> {
    await db('processing_appraisals').insert({
      id: a.id,
      team_id: a.teamId,
      user_id: a.userId,
      source_video_id: a.sourceVideoId,
      video_id: a.videoId,
      configuration_id: a.configurationId ?? null,
      options_json: JSON.stringify(a.options),
      start_ms: a.startMs,
      end_ms: a.endMs,
      billing_type: a.billingType,
      appraisal_json: JSON.stringify({ appraisal: a.appraisal, fileExtension: a.fileExtension }),
      expires_at: a.expiresAt,
      accepted_video_id: a.acceptedVideoId ?? null,
      created_at: a.createdAt,
    });
  },

  async byIdForUpdate(trx: Knex, id: string): Promise<AppraisalRecord | undefined> {
    await lockRowForUpdate(trx, 'processing_appraisals', id);
    const row = (await trx('processing_appraisals').where({ id }).first()) as AppraisalRecordRow | undefined;
    return appraisalRecordRows.one(row);
  },

  async markAccepted(db: Knex, id: string, videoId: string): Promise<void> {
    await db('processing_appraisals').where({ id }).update({ accepted_video_id: videoId });
  },

  async deleteExpiredBefore(db: Knex, before: Date): Promise<number> {
    return db('processing_appraisals').where('expires_at', '<', before).delete();
  },
};
