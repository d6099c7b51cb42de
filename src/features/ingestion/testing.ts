/**
 * Test support of the ingestion feature: what test/, bench/ and scripts/ may use beyond the face
 * (index.ts), and nothing else may import (docs/architecture.md, "Test support entries").
 */
import type { Knex } from 'knex';
import { ingestionStore } from './ingestion.store';

/**
 * Turns the team's free clip on or off on the given database (a test's own connection, or a child
 * process's file), so a test's video has only its own stages. Returns the number of teams changed.
 */
export function setFreeClipEnabled(db: Knex, teamId: string, enabled: boolean): Promise<number> {
  return ingestionStore.setFreeClipEnabled(db, teamId, enabled);
}
