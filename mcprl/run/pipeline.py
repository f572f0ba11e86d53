"""The asynchronous pipeline of a training run (`train.max_off_policy_steps` = K, see
docs/scaling.md): each step's batch collected up to K steps before it is trained (`Pipeline`),
and the rule for a group sampled too long before its step (`split_stale`)."""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import anyio

from mcprl.types import TrajectoryGroup

if TYPE_CHECKING:
    from anyio.abc import TaskGroup


def policy_version(group: TrajectoryGroup) -> int | None:
    """The step whose policy sampled the group (its oldest rollout's), None when none says."""
    return min((t.policy_version for t in group.trajectories if t.policy_version is not None), default=None)


def split_stale(
    groups: list[TrajectoryGroup], step: int, k: int
) -> tuple[list[TrajectoryGroup], list[TrajectoryGroup]]:
    """(fresh, stale): a group sampled by the policy of step v is trained at step `step` (the
    policy being updated, 0-based) only if step - v <= k."""
    fresh, stale = [], []
    for g in groups:
        v = policy_version(g)
        (stale if v is not None and step - v > k else fresh).append(g)
    return fresh, stale


Batch = TypeVar("Batch")


class Pipeline(Generic[Batch]):
    """The batches of steps `start`, `start`+1, ...: `await next()` is the next step's, and
    `trained()` says that step was trained (the policy moved on one version).

    `ahead` = K = 0: nothing runs in the background; `next` collects the step itself, after the
    previous step was trained (the synchronous loop). K > 0: a producer task collects the steps in
    order while steps train, and starts step t only once the policy is at version t - K or later
    (t - K - `start` steps trained), so every rollout of step t was sampled at most K versions
    before step t trains it. An exception collecting a step is raised by the `next` that asks for
    that step, after the steps before it were trained, as in the synchronous loop; the producer
    stops there. Leaving the `async with` cancels the producer: rollouts of steps that will not be
    trained end there (a resumed run collects them again: a step's batch is a function of the step).
    """

    def __init__(self, collect: Callable[[int], Awaitable[Batch]], start: int, stop: int, ahead: int):
        self.collect, self.start, self.stop, self.ahead = collect, start, stop, ahead
        self.step = start  # the step `next` returns
        self._credits = anyio.Semaphore(ahead + 1)  # steps the producer may start before the next is trained
        self._send, self._receive = anyio.create_memory_object_stream[Any](math.inf)
        self._tg: TaskGroup | None = None

    async def __aenter__(self) -> Pipeline[Batch]:
        if self.ahead:
            self._tg = anyio.create_task_group()
            await self._tg.__aenter__()
            self._tg.start_soon(self._produce)
        return self

    async def __aexit__(self, *exc: Any) -> None:
        if self._tg is not None:
            self._tg.cancel_scope.cancel()
            try:
                await self._tg.__aexit__(*exc)
            except BaseExceptionGroup:
                if exc[1] is None:
                    raise
                # else the body's own exception, which the task group wraps: it goes on as it was raised
        self._send.close()
        self._receive.close()

    async def _produce(self) -> None:
        for step in range(self.start, self.stop):
            await self._credits.acquire()
            try:
                batch: Any = await self.collect(step)
            except Exception as e:
                batch = e
            await self._send.send(batch)
            if isinstance(batch, Exception):
                return

    async def next(self) -> Batch:
        step, self.step = self.step, self.step + 1
        if not self.ahead:
            return await self.collect(step)
        batch = await self._receive.receive()
        if isinstance(batch, Exception):
            raise batch
        return batch

    def trained(self) -> None:
        if self.ahead:
            self._credits.release()
