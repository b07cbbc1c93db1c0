"""Helpers shared by several families (not a family: it registers nothing)."""
