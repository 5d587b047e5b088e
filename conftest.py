"""pytest glue: the case-file plugin lives in harness/plugin/."""
pytest_plugins = ["harness.plugin"]
