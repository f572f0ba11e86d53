from mcprl.servers import serve
from mcprl.servers.calculator.server import build

serve.main(build, "The calculator MCP server (add, subtract, multiply, divide, power).")
