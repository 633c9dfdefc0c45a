"""Serving in training mode: live running statistics along a stream."""
