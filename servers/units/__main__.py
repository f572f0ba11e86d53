from mcprl.servers import serve
from mcprl.servers.units.server import build

serve.main(build, "The units MCP server: convert and compare lengths, masses, volumes, durations and temperatures.")
