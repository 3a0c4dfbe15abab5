"""News recommendation on MIND."""
