"""Command-line tools that ship with minidp (run as ``python -m minidp.tools.<name>``)."""
