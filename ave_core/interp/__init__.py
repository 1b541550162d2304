"""ave_core/interp."""
