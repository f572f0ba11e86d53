"""A training run and what surrounds it: the stages put together for `mcprl train` and `mcprl eval`.

config.py         `RunConfig`: every setting of a run, nested by stage (a run file, the flags)
runner.py         `TrainingRun`: discover -> scenarios -> [roll out -> judge -> GRPO step] -> report
pipeline.py       the asynchronous pipeline (batches collected ahead of the step that trains them)
demonstration.py  the example exchange shown to the policy before its task
references.py     a grounded task's reference chain as messages the policy could have written
unsolved.py       what a run does with a group no rollout solved (`unsolved`: skip, guided-retry, reference)
metrics.py        aggregate figures over rollouts, and metrics.jsonl
evaluate.py       `mcprl eval`: a step (or a base model) on held-out scenarios
report.py         report.html for a run directory
"""
