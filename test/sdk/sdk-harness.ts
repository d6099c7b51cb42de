/** The SDK's client on a harness's app served on a real port (`h.listen()`). */
import { createVidmillClient, type VidmillClient, type VidmillClientOptions } from '../../sdk/src';
import type { Harness, TestUser } from '../helpers/harness';

/** `http://127.0.0.1:<port>` of the harness's listening app. */
export async function appBaseUrl(h: Harness): Promise<string> {
  const agent = await h.listen();
  // supertest names the listening server's address in the URL of a request it builds (not sent)
  return new URL((agent.get('/') as unknown as { url: string }).url).origin;
}

/** A client of the SDK for `user` (its API key) on the harness's app. */
export async function sdkClient(h: Harness, user: TestUser, opts: Partial<VidmillClientOptions> = {}): Promise<VidmillClient> {
  return createVidmillClient({ baseUrl: await appBaseUrl(h), apiKey: user.apiKey, ...opts });
}
