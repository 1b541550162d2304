"""ave_core/analysis."""
