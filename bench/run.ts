/**
 * `npm run bench -- <name>`: benchmarks that print their numbers next to a baseline measured in
 * the same run. Available: `webhooks`.
 */
import { webhooksBenchmark } from './webhooks';

const benches: Record<string, () => Promise<void>> = { webhooks: webhooksBenchmark };

async function main() {
  const names = process.argv.slice(2).filter((a) => a !== '--');
  const selected = names.length ? names : Object.keys(benches);
  for (const name of selected) {
    const bench = benches[name];
    if (!bench) throw new Error(`unknown benchmark ${name}; available: ${Object.keys(benches).join(', ')}`);
    await bench();
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
