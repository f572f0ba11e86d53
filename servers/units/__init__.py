"""Unit conversion tools (length, mass, volume, time, temperature). No task generator and no
worked example: it stands in for a user's server in tests of what mcprl builds for any server."""
