/**
 * Loaded by mocha before every test file (.mocharc.json `require`): property tests (fast-check)
 * run with one fixed seed, so `npm test` gives the same verdict on every run of a commit
 * (test/helpers/fuzzing.ts says how to ask for another seed). The fuzzers pass their own seeds.
 */
import fc from 'fast-check';
import { PROPERTY_SEED } from './fuzzing';

fc.configureGlobal({ ...fc.readConfigureGlobal(), seed: PROPERTY_SEED });
