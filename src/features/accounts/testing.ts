/**
 * Test support of the accounts feature: what test/, bench/ and scripts/ may use beyond the face
 * (index.ts), and nothing else may import (docs/architecture.md, "Test support entries").
 */
import { teamsStore } from './accounts.store';

/** A team row written directly, without a user, a membership or the team-created hook (the ledger's property test). */
export const teamRows: Pick<typeof teamsStore, 'insert'> = teamsStore;
