"""A game on a track, one game per process, as a chess server keeps one board: `open_moves` lists the squares the
player to move may go to (they change with every move), `whose_turn` says who moves, `board` is a picture of the
track (an image and nothing else), and `move` takes one of the open squares, refusing any other.

    python tests/data/track_game_server.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.server_fork import hand_over  # noqa: E402

hand_over()  # under pytest: run by a fork of a process that has imported the SDK (tests/server_fork.py)

from mcprl.servers import serve  # noqa: E402

PLAYERS = ("north", "south")
MOVES: list[str] = []  # the squares moved to, in turn


def squares_open() -> list[str]:
    here = len(MOVES) * 3
    return [f"q{here + step}" for step in (1, 2, 4)]


def open_moves() -> list[str]:
    """List the squares the player to move may go to."""
    return squares_open()


def whose_turn() -> str:
    """Say which player moves next."""
    return PLAYERS[len(MOVES) % 2]


def board() -> serve.Image:
    """Draw the track as a picture."""
    return serve.Image(data=b"\x89PNG" + ",".join(MOVES).encode(), format="png")


def move(square: str) -> str:
    """Move the player to move to a square."""
    if square not in squares_open():
        raise ValueError(f"illegal move: {square}")
    MOVES.append(square)
    return f"{PLAYERS[(len(MOVES) - 1) % 2]} moved to {square}; move {len(MOVES)}"


def build(seed: int = 0):
    server = serve.new_server("track", "A game on a track.")
    serve.add_tools(server, [board, whose_turn, open_moves, move], writes=["move"])
    return server


if __name__ == "__main__":
    serve.main(build, "A game on a track.")
