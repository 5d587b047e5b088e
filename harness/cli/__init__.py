"""Command-line entry points that sit above every layer (`python -m harness ...`)."""
