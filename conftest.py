"""pytest glue: the case-file plugin lives in harness/plugin.py."""
pytest_plugins = ["harness.plugin"]
