#!/usr/bin/env python3
"""Write the server's settings into package.json (``contributes.configuration``, the
section with id ``ave.checker``) from the server's own schema,
:func:`ave_lsp.config.settings_schema` -- the one definition of the settings.

    python3 editors/vscode/scripts/sync_settings.py          # rewrite package.json
    python3 editors/vscode/scripts/sync_settings.py --check  # exit 1 if it is out of date

Run it with the repository on PYTHONPATH (or Ave installed) after changing a setting in
``ave_lsp/config.py``; tests/editors/test_vscode_manifest.py fails until it is run.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
PACKAGE = HERE.parent / "package.json"
sys.path.insert(0, str(HERE.parents[2]))     # the repository root (ave_lsp)

from ave_lsp.config import settings_schema  # noqa: E402

CHECKER_ID = "ave.checker"
#: JSON Schema keywords copied into VS Code's configuration schema as they are
COPIED = ("type", "minimum", "minLength", "default", "description")


def checker_properties() -> dict:
    """``ave.<key>`` -> VS Code configuration property, in the schema's order."""
    out = {}
    for key, prop in settings_schema()["properties"].items():
        entry = {k: prop[k] for k in COPIED if k in prop}
        entry["scope"] = "resource"        # per workspace folder, like [tool.ave]
        out[f"ave.{key}"] = entry
    return out


def main(argv: list[str]) -> int:
    text = PACKAGE.read_text("utf-8")
    manifest = json.loads(text)
    sections = manifest["contributes"]["configuration"]
    checker = next(s for s in sections if s.get("id") == CHECKER_ID)
    checker["properties"] = checker_properties()
    new = json.dumps(manifest, indent=2, ensure_ascii=False) + "\n"
    if "--check" in argv:
        if new != text:
            print(f"{PACKAGE} is out of date: run {Path(__file__).name}", file=sys.stderr)
            return 1
        return 0
    if new != text:
        PACKAGE.write_text(new, "utf-8")
        print(f"updated {PACKAGE}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
