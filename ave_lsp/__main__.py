"""``python -m ave_lsp``: the same as the ``ave-lsp`` command."""

import sys

from ave_lsp.cli import main

sys.exit(main())
