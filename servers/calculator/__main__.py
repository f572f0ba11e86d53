from servers import serve
from servers.calculator.server import build

serve.main(build, "The calculator MCP server (add, subtract, multiply, divide, power).")
