"""mcprl's version. pyproject.toml reads it from here and the package face re-exports it; a module
of ours (the MCP client names it in its handshake) imports it from here, never from the face,
which resolves names from every layer (tests/test_import_graph.py)."""

__version__ = "0.1.0"
