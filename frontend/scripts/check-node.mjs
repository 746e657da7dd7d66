// Checks that the running Node.js is one the studio's toolchain supports (the root package.json's
// `engines.node`, which the README names) before `npm ci`, so an old Node fails with a clear
// message instead of a wall of EBADENGINE warnings and a broken build. No dependencies: it runs
// before anything is installed, so it reads only ranges of `^X.Y.Z` and `>=X.Y.Z` joined by `||`.
import { readFileSync } from "node:fs";

const range = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")).engines.node;
const parse = (v) => v.replace(/^v/, "").split(".").map(Number);
const compare = (a, b) => a[0] - b[0] || a[1] - b[1] || a[2] - b[2];

function admits(part, version) {
  const m = /^(\^|>=)(\d+\.\d+\.\d+)$/.exec(part.trim());
  if (!m) throw new Error(`check-node.mjs reads only ^X.Y.Z and >=X.Y.Z ranges, not "${part.trim()}"`);
  const low = parse(m[2]);
  if (compare(version, low) < 0) return false;
  return m[1] === ">=" || version[0] === low[0];
}

const current = parse(process.versions.node);
if (!range.split("||").some((part) => admits(part, current))) {
  console.error(
    `Node.js ${process.versions.node} is too old or unsupported for the studio: it needs ${range} ` +
      "(package.json engines.node). Install a supported Node.js (for example from nodejs.org or your " +
      "distribution's nodejs package) and run make again.",
  );
  process.exit(1);
}
