import { writeNatsConfig } from './nats-config.js';

// npm run nats-config -- [dir] [--tenant-tap <tenant>]…   (default dir: .flotilla-compose, what docker-compose.yml reads)
const args = process.argv.slice(2);
const tenants: string[] = [];
let dir = '.flotilla-compose';
for (let index = 0; index < args.length; index += 1) {
  const arg = args[index]!;
  if (arg === '--tenant-tap') tenants.push(args[(index += 1)] ?? '');
  else if (arg.startsWith('-')) {
    console.error(`unknown option ${arg}\nusage: npm run nats-config -- [dir] [--tenant-tap <tenant>]...`);
    process.exit(2);
  } else dir = arg;
}
try {
  const written = await writeNatsConfig(dir, tenants);
  console.log(
    `nats-server configuration: ${written.config}\npasswords (owner-only, kept if they exist):\n${written.users.map((file) => `  ${file}`).join('\n')}`,
  );
} catch (error) {
  console.error(`nats-config: ${(error as Error).message}`);
  process.exit(1);
}
