/**
 * The sign-in lock under parallel guesses (docs/security.md, "Sign-in limits"): a password
 * check is claimed in the database before the password is verified, so at most
 * VIDMILL_LOGIN_MAX_FAILURES passwords are verified per e-mail between two successes, in one
 * process or several. Password verifications are counted with a wrapper around
 * `AccountsService.checkPassword`; the wrapper holds every verification until each guess of a
 * batch is answered, being verified or waiting for the checks in flight
 * (`AccountsService.awaitChecks`), so all guesses of a batch overlap.
 */
import { strict as assert } from 'node:assert';
import type supertest from 'supertest';
import type { AccountsService } from '../../src/features/accounts';
import { TEST_DIALECT } from '../helpers/database';
import { basic, createHarness, expectError, Harness, TestUser } from '../helpers/harness';

const MAX_FAILURES = 5;
const LOCK_MINUTES = 15;
const GUESSES = 40;

/** Counts password verifications of the given services; see `batch` for holding them. */
class CheckCounter {
  checks = 0;
  private held: (() => void)[] = [];
  /** Sign-ins waiting for the checks in flight to end (the budget of checks is claimed). */
  private waiting = 0;
  private expected = 0;
  private answered = 0;
  private onHeld: { count: number; resolve: () => void }[] = [];

  constructor(services: AccountsService[]) {
    for (const accounts of services) {
      const verify = accounts.checkPassword.bind(accounts);
      accounts.checkPassword = async (password, hash) => {
        this.checks++;
        if (this.expected > 0) await this.hold();
        return verify(password, hash);
      };
      const wait = accounts.awaitChecks.bind(accounts);
      accounts.awaitChecks = async (userId) => {
        this.waiting++;
        this.releaseIfAllIn();
        try {
          await wait(userId);
        } finally {
          this.waiting--;
        }
      };
    }
  }

  /**
   * Runs `guesses` (request thunks) at once; verifications are held until every guess is
   * answered, held or waiting, then released together.
   */
  async batch(guesses: (() => Promise<supertest.Response>)[]): Promise<supertest.Response[]> {
    this.expected = guesses.length;
    this.answered = 0;
    try {
      return await Promise.all(
        guesses.map((guess) =>
          guess().then((res) => {
            this.answered++;
            this.releaseIfAllIn();
            return res;
          }),
        ),
      );
    } finally {
      this.expected = 0;
    }
  }

  /** Resolves once `count` verifications are being held. */
  whenHeld(count: number): Promise<void> {
    return new Promise((resolve) => {
      this.onHeld.push({ count, resolve });
      this.notifyHeld();
    });
  }

  private hold(): Promise<void> {
    return new Promise((resolve) => {
      this.held.push(resolve);
      this.notifyHeld();
      this.releaseIfAllIn();
    });
  }

  private notifyHeld(): void {
    for (const w of this.onHeld.filter((w) => this.held.length >= w.count)) {
      this.onHeld.splice(this.onHeld.indexOf(w), 1);
      w.resolve();
    }
  }

  private releaseIfAllIn(): void {
    if (this.held.length + this.answered + this.waiting < this.expected) return;
    for (const release of this.held.splice(0)) release();
  }
}

function tally(responses: supertest.Response[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const r of responses) {
    const key = r.status === 200 ? '200' : `${r.status} ${r.body.errorCode}`;
    out[key] = (out[key] ?? 0) + 1;
  }
  return out;
}

describe(`Sign-in lock under parallel guesses (${TEST_DIALECT})`, () => {
  let h: Harness;
  let counter: CheckCounter;
  let second: ReturnType<Harness['anotherProcess']>;
  before(async () => {
    // The harness's sign-in rate limits are high enough to stay out of the way.
    h = await createHarness({ login: { maxFailures: MAX_FAILURES, lockMinutes: LOCK_MINUTES } });
    second = h.anotherProcess();
    counter = new CheckCounter([h.services.accounts, second.services.accounts]);
  });
  after(() => h.close());

  const signIn = (request: supertest.Agent, email: string, password: string) => () =>
    request
      .get('/api/v1/api-keys')
      .set('Authorization', basic(email, password))
      .then((res) => res);

  let victim: TestUser;
  beforeEach(async () => {
    victim = await h.user();
    counter.checks = 0;
  });

  it(`at most ${MAX_FAILURES} passwords are verified for ${GUESSES} parallel guesses, and the right one sent after ${MAX_FAILURES} wrong ones does not sign in`, async () => {
    const wrong = Array.from({ length: GUESSES - 1 }, (_, i) => signIn(h.request, victim.email, `wrong-${i}`));
    // The right password goes out once five wrong guesses are being verified.
    const right = () => counter.whenHeld(MAX_FAILURES).then(signIn(h.request, victim.email, victim.password));
    const responses = await counter.batch([...wrong, right]);
    assert.equal(counter.checks, MAX_FAILURES);
    assert.deepEqual(tally(responses), { '401 INVALID_CREDENTIALS': MAX_FAILURES, '401 ACCOUNT_LOCKED': GUESSES - MAX_FAILURES });
    expectError(responses[GUESSES - 1]!, 401, 'ACCOUNT_LOCKED');
  });

  it('the right password is refused (ACCOUNT_LOCKED) without being verified while the e-mail is locked, and signs in after the lock time', async () => {
    await counter.batch(Array.from({ length: GUESSES }, (_, i) => signIn(h.request, victim.email, `wrong-${i}`)));
    assert.equal(counter.checks, MAX_FAILURES);
    h.clock.advance(LOCK_MINUTES * 60_000 - 1000);
    expectError(await signIn(h.request, victim.email, victim.password)(), 401, 'ACCOUNT_LOCKED');
    assert.equal(counter.checks, MAX_FAILURES);
    h.clock.advance(1000);
    assert.equal((await signIn(h.request, victim.email, victim.password)()).status, 200);
    assert.equal(counter.checks, MAX_FAILURES + 1);
  });

  it(`after the lock time the e-mail has a fresh budget of ${MAX_FAILURES} checks, then locks again`, async () => {
    for (let round = 0; round < 2; round++) {
      await counter.batch(Array.from({ length: GUESSES }, (_, i) => signIn(h.request, victim.email, `wrong-${i}`)));
      assert.equal(counter.checks, MAX_FAILURES * (round + 1));
      expectError(await signIn(h.request, victim.email, victim.password)(), 401, 'ACCOUNT_LOCKED');
      h.clock.advance(LOCK_MINUTES * 60_000);
    }
  });

  it('a right password within the budget signs in and resets the count, also on the last check', async () => {
    for (let i = 0; i < MAX_FAILURES - 1; i++) expectError(await signIn(h.request, victim.email, 'wrong')(), 401, 'INVALID_CREDENTIALS');
    assert.equal((await signIn(h.request, victim.email, victim.password)()).status, 200);
    for (let i = 0; i < MAX_FAILURES - 1; i++) expectError(await signIn(h.request, victim.email, 'wrong')(), 401, 'INVALID_CREDENTIALS');
    assert.equal((await signIn(h.request, victim.email, victim.password)()).status, 200);
    assert.equal(counter.checks, 2 * MAX_FAILURES);
  });

  it(`two API processes on one database guessing in parallel verify at most ${MAX_FAILURES} passwords together`, async () => {
    const guesses = Array.from({ length: GUESSES }, (_, i) => signIn(i % 2 === 0 ? h.request : second.request, victim.email, `wrong-${i}`));
    const responses = await counter.batch(guesses);
    assert.equal(counter.checks, MAX_FAILURES);
    assert.deepEqual(tally(responses), { '401 INVALID_CREDENTIALS': MAX_FAILURES, '401 ACCOUNT_LOCKED': GUESSES - MAX_FAILURES });
    expectError(await signIn(second.request, victim.email, victim.password)(), 401, 'ACCOUNT_LOCKED');
    expectError(await signIn(h.request, victim.email, victim.password)(), 401, 'ACCOUNT_LOCKED');
    h.clock.advance(LOCK_MINUTES * 60_000);
    assert.equal((await signIn(second.request, victim.email, victim.password)()).status, 200);
  });

  it(`the lock counts failed sign-ins: ${4 * MAX_FAILURES} simultaneous sign-ins with the right password, in two processes, all succeed`, async () => {
    const rights = Array.from({ length: 4 * MAX_FAILURES }, (_, i) => signIn(i % 2 === 0 ? h.request : second.request, victim.email, victim.password));
    const responses = await counter.batch(rights);
    assert.deepEqual(tally(responses), { '200': 4 * MAX_FAILURES });
    // Never more than the budget at once: the others waited for a success to free it.
    assert.equal(counter.checks, 4 * MAX_FAILURES);
  });

  it(`the lock still locks after ${MAX_FAILURES} wrong passwords in a row, the right one included`, async () => {
    for (let i = 0; i < MAX_FAILURES; i++) expectError(await signIn(h.request, victim.email, `wrong-${i}`)(), 401, 'INVALID_CREDENTIALS');
    expectError(await signIn(h.request, victim.email, victim.password)(), 401, 'ACCOUNT_LOCKED');
    expectError(await signIn(second.request, victim.email, victim.password)(), 401, 'ACCOUNT_LOCKED');
    assert.equal(counter.checks, MAX_FAILURES);
    h.clock.advance(LOCK_MINUTES * 60_000);
    assert.equal((await signIn(h.request, victim.email, victim.password)()).status, 200);
  });

  it('an unknown e-mail costs one password verification, as a known one does', async () => {
    expectError(await signIn(h.request, 'nobody@example.com', 'guess')(), 401, 'INVALID_CREDENTIALS');
    assert.equal(counter.checks, 1);
    expectError(await signIn(h.request, victim.email, 'guess')(), 401, 'INVALID_CREDENTIALS');
    assert.equal(counter.checks, 2);
  });
});
