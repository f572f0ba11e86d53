from mcprl.servers import serve
from mcprl.servers.inventory.server import build

serve.main(build, "The inventory MCP server: a seeded hardware warehouse.")
