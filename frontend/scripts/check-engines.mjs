// Fails when a package in package-lock.json does not run on a Node.js the README names: `npm ci`
// would print EBADENGINE warnings for it (it did, 18 times, when graphql-codegen's dependencies
// moved to Node 22). Checked: every `engines.node` admits the lowest version of the root
// package.json's `engines.node` and the Node.js running this; and the README names that lowest
// version. A package that fails is pinned to an older release (root package.json `overrides`).
import { readFileSync } from "node:fs";
import semver from "semver";

const root = new URL("../../", import.meta.url);
const read = (path) => readFileSync(new URL(path, root), "utf8");
const supported = JSON.parse(read("package.json")).engines.node;
const lowest = semver.minVersion(supported).version;
const problems = [];

const named = /Node\.js (\d+\.\d+)\+/.exec(read("README.md"));
if (!named || semver.coerce(named[1]).version !== lowest) {
  problems.push(
    `README.md names ${named ? `Node.js ${named[1]}+` : "no Node.js version"}, ` +
      `package.json engines.node (${supported}) starts at ${lowest}`,
  );
}

const versions = [lowest, process.versions.node].filter((v) => semver.satisfies(v, supported));
for (const [path, entry] of Object.entries(JSON.parse(read("package-lock.json")).packages)) {
  const wanted = entry.engines?.node;
  if (!path || typeof wanted !== "string") continue;
  for (const version of versions) {
    if (!semver.satisfies(version, wanted)) {
      problems.push(`${path.replace(/^.*node_modules\//, "")}@${entry.version} needs Node ${wanted}, not ${version} (${path})`);
    }
  }
}

if (problems.length) {
  console.error(`Node.js versions that package-lock.json breaks (supported: ${supported}):`);
  for (const problem of problems) console.error(`  ${problem}`);
  process.exit(1);
}
console.log(`package-lock.json: every package runs on Node ${versions.join(" and ")}`);
