"""Arithmetic tools; tasks are expressions with exact answers. Small enough for a 135M model to learn."""
