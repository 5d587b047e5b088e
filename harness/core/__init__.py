"""The lowest layer: the tables and small types every layer shares (dtypes, formats, SoC
families, the status enum, errors, JSON safety, atomic writes)."""
