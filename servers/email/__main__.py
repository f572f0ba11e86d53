from mcprl.servers import serve
from mcprl.servers.email.server import build

serve.main(build, "The email MCP server: a seeded mailbox to search and read.")
