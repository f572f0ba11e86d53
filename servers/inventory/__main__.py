from servers import serve
from servers.inventory.server import build

serve.main(build, "The inventory MCP server: a seeded hardware warehouse.")
