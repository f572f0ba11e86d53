"""MCP servers shipped with mcprl, each runnable as `python -m mcprl.servers.NAME [--transport stdio|http|sse]
[--port P] [--seed S]` on mcp 1.x or 2.x.

Training environments (with `NAME.tasks.generate(n, seed)` and `NAME.tasks.check(scenario, trajectory)`,
task sets that `mcprl.tasks.get(NAME)` finds as it finds a user's, listed in `mcprl.tasks.SHIPPED`):
    calculator  arithmetic on two numbers; 1-5 operation expressions (the demo's target)
    inventory   a seeded hardware warehouse: lookups, aggregates, stock changes checked on the final state
    email       a seeded mailbox of 300 emails: questions whose answer is in exactly one email

Without tasks or example (stands in for a user's server): `units` (unit conversions, 4 tools).

Test servers: `echo_env` (environment, sleeping, huge results, failures, crashes) and `bare_jsonrpc`
(hand-written JSON-RPC: pagination, zero tools, protocol errors, invalid tools).
"""
