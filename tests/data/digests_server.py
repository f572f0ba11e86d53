"""Digests of texts, as mcp-hashlib (PyPI) serves hashlib: a tool per algorithm, one that names the algorithms it has
in a line of text joined by commas, tools that take an algorithm's name and refuse any other ("unsupported hash type
x"), and a key's derivation from a password, which says nothing of whether it writes (nor does the making of a hash
object): no result names an algorithm but that line.

    python tests/data/digests_server.py
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.server_fork import hand_over  # noqa: E402

hand_over()  # under pytest: run by a fork of a process that has imported the SDK (tests/server_fork.py)

from mcprl.servers import serve  # noqa: E402

ALGORITHMS = ("blake2b", "md5", "sha1", "sha256", "sha512")


def _algorithm(algorithm: str) -> str:
    if algorithm not in ALGORITHMS:
        raise ValueError(f"unsupported hash type {algorithm}")
    return algorithm


def hash_md5(data: str) -> str:
    """Compute MD5 hash"""
    return hashlib.md5(data.encode()).hexdigest()


def hash_sha256(data: str) -> str:
    """Compute SHA256 hash"""
    return hashlib.sha256(data.encode()).hexdigest()


def hash_info() -> str:
    """Get information about available hash algorithms"""
    return ", ".join(ALGORITHMS)


def hash_properties(algorithm: str) -> dict:
    """Get properties of a hash algorithm"""
    made = hashlib.new(_algorithm(algorithm))
    return {"name": made.name, "digest_size": made.digest_size, "block_size": made.block_size}


def hash_new(algorithm: str, data: str) -> str:
    """Create hash object using any available algorithm"""
    return hashlib.new(_algorithm(algorithm), data.encode()).hexdigest()


def hash_scrypt(password: str, salt: str) -> str:
    """Scrypt key derivation"""
    return hashlib.scrypt(password.encode(), salt=salt.encode(), n=16, r=8, p=1, dklen=32).hex()


def build(seed: int = 0):
    server = serve.new_server("digests", "Digests of texts.")
    tools = [hash_md5, hash_sha256, hash_info, hash_properties, hash_new, hash_scrypt]
    # (as the server's tools carry no hints: a making of a hash object and a derivation may write, for all a client
    # knows)
    serve.add_tools(server, tools, writes=["hash_new", "hash_scrypt"])
    return server


if __name__ == "__main__":
    serve.main(build, "Digests of texts.")
