"""mcprl.cluster.actors, the one way the run keeps its Ray actors (rollout workers, policy replicas,
the trainer actor): on the two-node loopback cluster of test_cluster, an actor that starts, one
that fails in its start(), one too slow, one that dies while starting, and a replacement."""

from __future__ import annotations

import time

import anyio
import pytest

from mcprl.errors import UserError
from tests.cluster.test_cluster import cluster, node_ids  # noqa: F401 (cluster: the fixture)

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def ray_on(cluster):  # noqa: F811
    import ray

    ray.init(address=cluster.address, logging_level="WARNING", log_to_driver=False)
    try:
        yield ray
    finally:
        ray.shutdown()


def kinds():
    """Actor classes defined here (so Ray sends them by value) and their kinds."""
    from mcprl.cluster.actors import ActorKind, where

    class Thing:
        def __init__(self, mode: str, closed: bool = False):
            if mode == "dies":
                raise RuntimeError("cannot build a thing here")
            self.mode, self.closed = mode, closed

        def start(self):
            if self.mode == "slow":
                time.sleep(30)
            return {**where(), "error": "no thing on this node"} if self.mode == "fails" else {**where(), "x": 1}

        def close(self):
            self.closed = True

        def closed_yet(self):
            return self.closed

    def kind(timeout_s: float = 60) -> ActorKind:
        return ActorKind("thing", Thing, {"num_cpus": 0}, timeout_s, needs="a node needs a thing", remedy="ask less")

    return kind


def test_an_actor_starts_is_replaced_and_ends(ray_on, cluster):  # noqa: F811
    from mcprl.cluster import actors

    kind = kinds()
    a = actors.start_blocking(kind(), "ok")
    assert a.node in node_ids(cluster) and a.info["x"] == 1 and a.info["ip"]
    b = anyio.run(actors.replace, kind(), a.handle, "ok")
    assert b.pid != a.pid
    with pytest.raises(ray_on.exceptions.RayActorError):  # the one replaced was ended
        ray_on.get(a.handle.closed_yet.remote(), timeout=30)
    actors.retire_blocking(b.handle)
    with pytest.raises(ray_on.exceptions.RayActorError):
        ray_on.get(b.handle.closed_yet.remote(), timeout=30)


@pytest.mark.parametrize("blocking", [False, True])
def test_an_actor_that_does_not_start_is_one_line_naming_where_and_why(ray_on, cluster, blocking):  # noqa: F811
    from mcprl.cluster import actors

    kind = kinds()

    def start(k, mode):
        return actors.start_blocking(k, mode) if blocking else anyio.run(actors.start, k, mode)

    with pytest.raises(UserError) as failed:
        start(kind(), "fails")
    message = str(failed.value)
    assert message.startswith("thing on Ray node ") and "\n" not in message
    assert "failed: no thing on this node (a node needs a thing)" in message
    assert any(n[:8] in message for n in node_ids(cluster))
    t = time.monotonic()
    late = r"a thing did not start within 1 s .*raise cluster.start_timeout_s or ask less"
    with pytest.raises(UserError, match=late):
        start(kind(timeout_s=1), "slow")
    assert time.monotonic() - t < 20
    died = r"a thing died while starting: .*cannot build a thing here.*a node needs a thing"
    with pytest.raises(UserError, match=died) as dead:
        start(kind(), "dies")
    assert "\n" not in str(dead.value)
