"""ave_core/jit."""
