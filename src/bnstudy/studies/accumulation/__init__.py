"""Gradient accumulation against ghost batch norm: micro-batch statistics, batch steps."""
