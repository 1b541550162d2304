"""ave_core/compiler."""
