"""Helpers shared by tests: in-process agents for the python target."""
