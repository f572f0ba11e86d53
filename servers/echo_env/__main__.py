from mcprl.servers import serve
from mcprl.servers.echo_env.server import build

serve.main(build, "The echo_env test MCP server.")
