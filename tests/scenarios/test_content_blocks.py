"""Tool results as content blocks (mcprl.tools.content): a call's outcome carries the blocks the server
sent beside the text the model is shown, recording and replay keep them, and grounding reads answers
from the text blocks and structured content only, never from the placeholder the client writes for an
image, audio, a blob or a link."""

from __future__ import annotations

import base64
import random
import re
import sys
from pathlib import Path

import pytest

from mcprl.scenarios.candidates import candidates
from mcprl.scenarios.config import ExploreConfig
from mcprl.scenarios.explore import explore
from mcprl.scenarios.explored import Exploration, ExploredCall
from mcprl.scenarios.grounded import ground
from mcprl.tools import ServerSpec, ToolPool
from mcprl.tools.content import (
    AudioContent,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    parse_blocks,
)
from mcprl.tools.convert import render
from mcprl.tools.spec import CassetteSettings

pytestmark = pytest.mark.anyio
MEDIA = Path(__file__).resolve().parents[1] / "image_server.py"
# what the client writes for content that is not text: `[image/png, 4 KB]`, `[audio content]`
PLACEHOLDER = re.compile(r"\[[\w.+-]+/[\w.+-]+, \d+(?:\.\d+)? (?:B|KB|MB)\]|\[\w+ content\]")


def media(size: int = 4096, **cassette) -> ServerSpec:
    return ServerSpec.parse(f"{sys.executable} {MEDIA} {size}", cassette=CassetteSettings(**cassette))


async def test_an_outcome_carries_the_blocks_and_a_cassette_replays_them(tmp_path):
    cassette = tmp_path / "c.jsonl"
    seen = {}
    async with ToolPool(media(5000, record=str(cassette))) as pool, pool.session() as s:
        for name, args in [("get_tiny_image", {}), ("get_media", {}), ("get_sum", {"a": 2, "b": 3})]:
            seen[name] = await s.call(name, args)
    image = seen["get_tiny_image"]
    assert [type(b) for b in image.content] == [TextContent, ImageContent, TextContent]
    assert image.content[1].mimeType == "image/png" and len(base64.b64decode(image.content[1].data)) == 5000
    assert image.text == "Here's the image you requested:\n[image/png, 5 KB]\nThe image above is the MCP logo."
    assert image.data_text == "Here's the image you requested:\nThe image above is the MCP logo."
    other = seen["get_media"]
    assert [type(b) for b in other.content] == [AudioContent, EmbeddedResource, ResourceLink]
    assert other.text == "[audio/wav, 15 KB]\n[application/pdf, 10 KB]\nfile:///big.csv"
    assert other.data_text == "file:///big.csv"  # a link's URI is the server's; a placeholder is ours
    assert seen["get_sum"].data_text == seen["get_sum"].text == "The sum of 2 and 3 is 5."
    assert "content" not in image.model_dump()  # the blocks ride with the outcome; the cassette keeps the wire

    async with ToolPool(media(5000, replay=str(cassette))) as pool, pool.session() as s:
        for name, args in [("get_tiny_image", {}), ("get_media", {}), ("get_sum", {"a": 2, "b": 3})]:
            again = await s.call(name, args)
            assert again.replayed == "exact"
            assert (again.content, again.text, again.data_text) == (
                seen[name].content,
                seen[name].text,
                seen[name].data_text,
            )


def _case(rng: random.Random) -> tuple[list[dict], set[str]]:
    """A result of text blocks around content that is not text, and the values only the placeholders hold."""
    n_bytes = rng.choice([rng.randint(1, 1023), rng.randint(1024, 900 * 1024), rng.randint(1 << 20, 9 << 20)])
    b64 = base64.b64encode(b"\0" * n_bytes).decode()
    mime = rng.choice(["image/png", "image/jpeg", "audio/wav", "application/pdf", "application/octet-stream"])
    binary = rng.choice(
        [
            {"type": "image", "data": b64, "mimeType": mime},
            {"type": "audio", "data": b64, "mimeType": mime},
            {"type": "resource", "resource": {"uri": "file:///x.bin", "blob": b64, "mimeType": mime}},
            {"type": "future_kind", "payload": b64},
        ]
    )
    shown = render(parse_blocks([binary]), None, 10**9).text
    texts = rng.sample(
        [
            "Here's the file you requested:",
            "The image above is the MCP logo.",
            "Owner: Dana Reyes",
            "Status: archived",
            "The file was scanned.",
        ],
        rng.randint(0, 2),
    )
    blocks = [{"type": "text", "text": t} for t in texts]
    blocks.insert(rng.randint(0, len(blocks)), binary)
    own = set(re.findall(r"[\w.+/-]+", shown)) - {w for t in texts for w in re.findall(r"[\w.+/-]+", t)}
    return blocks, own


def test_no_answer_is_grounded_in_a_placeholder_whatever_the_content():
    rng = random.Random(40)
    for _ in range(150):
        blocks, own = _case(rng)
        content = parse_blocks(blocks)
        text, data = render(content, None, rng.choice([40, 4000]))
        assert not PLACEHOLDER.search(data), (blocks, data)
        call = ExploredCall(
            index=0, session=0, tool="fetch_file", arguments={}, text=text, data_text=None if data == text else data
        )
        for seed in range(2):
            for t in candidates(Exploration(calls=[call]), {}, seed=seed):
                assert str(t.answer) not in own, (blocks, t.task, t.answer)
                assert not PLACEHOLDER.search(t.task), t.task


def test_lines_html_breaks_join_are_read_as_lines_and_shown_as_sent():
    """mcp-server-obsidian joins the paths its search found with `<br>---<br>`: the text the model is shown is the
    server's, the data grounding reads has its lines, and the listing is asked for by its names."""
    sent = "Garden plan.md<br>---<br>Shopping list.md<br/>---<BR>Reading list.md"
    text, data = render(parse_blocks([{"type": "text", "text": sent}]), None, 4000)
    assert text == sent and data.splitlines() == ["Garden plan.md", "---", "Shopping list.md", "---", "Reading list.md"]
    call = ExploredCall(index=0, session=0, tool="search_notes", arguments={"query": "list"}, text=text, data_text=data)
    listed = [t.answer for t in candidates(Exploration(calls=[call]), {}, seed=0)]
    assert listed == [["Garden plan.md", "Shopping list.md", "Reading list.md"]], listed


async def test_a_server_answering_an_image_and_text_grounds_nothing_from_the_image():
    async with ToolPool(media()) as pool:
        exploration = await explore(pool, ExploreConfig(calls=24), seed=0, say=lambda _: None)
        tasks, _ = await ground(pool, 12, exploration, seed=0, say=lambda _: None)
    called = {c.tool for c in exploration.calls if not c.is_error}
    assert {"get_tiny_image", "get_media", "get_sum"} <= called
    image = next(c for c in exploration.calls if c.tool == "get_tiny_image")
    assert "[image/png, 4 KB]" in image.text and "4 KB" not in image.data
    # the sums, and at most the link's URI (the server wrote it); nothing of the image, the clip or the PDF
    assert tasks and all(t.reference[-1].tool == "get_sum" or t.answer == "file:///big.csv" for t in tasks), [
        (t.task, t.answer) for t in tasks
    ]
    # (a sum may be 4; the image's 4 KB is no answer)
    media_answers = (4, "4", "image/png", "audio/wav", "application/pdf")
    assert not [t for t in tasks if t.reference[-1].tool != "get_sum" and t.answer in media_answers]
