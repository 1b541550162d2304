#!/usr/bin/env bash
# Build, check, test and package the VS Code extension (called by .ci/run before pytest):
#   npm ci; package.json's ave.* settings match the server's schema; tsc --noEmit; eslint;
#   esbuild bundle; unit tests and end-to-end tests against the real ave-lsp (node:test, a
#   stand-in vscode module: no VS Code); vsce package -> editors/vscode/ave.vsix
# Without node/npm (or with Node < 20) it says why and exits 0: the extension is not built.
set -euo pipefail
cd "$(dirname "$0")"
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    echo "editors/vscode/ci.sh: node or npm not found: the VS Code extension is not built (needs Node 20+)"
    exit 0
fi
major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$major" -lt 20 ]; then
    echo "editors/vscode/ci.sh: Node $(node --version) is older than 20: the VS Code extension is not built"
    exit 0
fi
PY=${PYTHON:-python3}
echo "== VS Code extension (node $(node --version), npm $(npm --version))"
npm ci --no-audit --no-fund
"$PY" scripts/sync_settings.py --check
npm run typecheck
npm run lint
npm run bundle
# the end-to-end tests start the real server: they need a Python with Ave installed
if "$PY" -c "import ave_lsp.server, pygls" >/dev/null 2>&1; then
    export AVE_TEST_PYTHON="${AVE_TEST_PYTHON:-$(command -v "$PY")}"
else
    echo "editors/vscode/ci.sh: $PY cannot import ave_lsp.server: the extension's end-to-end tests skip"
fi
npm test
rm -f ave.vsix
npm run package
"$PY" - <<'PYEOF'
import json, zipfile
with zipfile.ZipFile("ave.vsix") as z:
    names = set(z.namelist())
    for need in ("extension/package.json", "extension/dist/extension.js", "extension/readme.md"):
        assert need in names, f"ave.vsix lacks {need}: {sorted(names)}"
    shipped = json.loads(z.read("extension/package.json"))
stray = [n for n in names if "node_modules/" in n or n.startswith("extension/src/")]
assert not stray, f"ave.vsix carries sources or node_modules: {stray[:5]}"
print(f"ave.vsix: {shipped['name']} {shipped['version']}, {len(names)} files")
PYEOF
