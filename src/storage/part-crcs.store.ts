/**
 * SQL for the CRC-32C of each part a copy has stored (video in: `video_in_parts`; video out:
 * `video_out_parts`), so a resumed copy moves only the missing parts and still knows the CRC of
 * the whole file. Both tables have the same shape: (video_id, part_number) -> crc32c.
 */
import type { Knex } from 'knex';

export function partCrcsStore(table: 'video_in_parts' | 'video_out_parts') {
  return {
    /** Records a part's CRC-32C (idempotent: a part copied twice keeps one row). */
    async recordPart(db: Knex, videoId: string, partNumber: number, crc32c: number): Promise<void> {
      await db(table).insert({ video_id: videoId, part_number: partNumber, crc32c }).onConflict(['video_id', 'part_number']).merge(['crc32c']);
    },

    async parts(db: Knex, videoId: string): Promise<Map<number, number>> {
      const rows = await db(table).where({ video_id: videoId }).select('part_number', 'crc32c');
      return new Map(rows.map((r: { part_number: number | string; crc32c: number | string }) => [Number(r.part_number), Number(r.crc32c)]));
    },

    /** The parts are part of a finished file (or must be copied again); their CRCs are dropped. */
    async forgetParts(db: Knex, videoId: string): Promise<void> {
      await db(table).where({ video_id: videoId }).delete();
    },
  };
}
