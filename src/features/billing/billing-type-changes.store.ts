/** SQL of the record of billing-type switches. */
import type { Knex } from 'knex';

export const billingTypeChangesStore = {
  async append(db: Knex, c: { teamId: string; from: string; to: string; reason?: string; at: Date }): Promise<void> {
    await db('billing_type_changes').insert({ team_id: c.teamId, from_type: c.from, to_type: c.to, reason: c.reason ?? null, created_at: c.at });
  },
};
