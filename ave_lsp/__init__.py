"""ave_lsp."""
