"""AutoRL: from a task description, generate a system prompt, inputs and a RULER rubric, then train
(`mcprl.autorl.run.autorl`, `autorl "..."`, `mcprl autorl "..."`). Kept import-free so `mcprl --help` stays instant."""
