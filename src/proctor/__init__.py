"""Proctor: evaluate LLM agents by their behaviour."""

__version__ = "0.1.0"
