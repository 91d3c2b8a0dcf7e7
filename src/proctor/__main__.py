"""`python -m proctor` runs the command line."""

from proctor.cli import script

script()
