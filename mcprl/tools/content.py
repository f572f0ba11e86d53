"""A tool result's content blocks, typed (MCP's `CallToolResult.content`): text, image, audio, an embedded
resource, a resource link, and any other kind a server sends. `ToolOutcome.content` carries them as the
server sent them, beside the text the model is shown (mcprl.tools.convert.render, which writes a
placeholder such as `[image/png, 4 KB]` for what is not text). What reads a result as data (grounding,
mcprl.scenarios) reads the blocks that are text (`is_text`) and the structured content, never a placeholder."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter


class _Block(BaseModel):
    model_config = ConfigDict(extra="allow")  # annotations, _meta, what a later MCP adds


class TextContent(_Block):
    type: Literal["text"]
    text: str = ""


class ImageContent(_Block):
    type: Literal["image"]
    data: str = Field(default="", description="base64")
    mimeType: str | None = None


class AudioContent(_Block):
    type: Literal["audio"]
    data: str = Field(default="", description="base64")
    mimeType: str | None = None


class EmbeddedResource(_Block):
    """A resource's contents in the result: `text` (a text resource) or `blob` (base64), with its `uri`."""

    type: Literal["resource"]
    resource: dict[str, Any] = Field(default_factory=dict)


class ResourceLink(_Block):
    type: Literal["resource_link"]
    uri: str = ""


class OtherContent(_Block):
    """A kind of block this client does not know."""

    type: Any = None


ContentBlock = Annotated[
    TextContent | ImageContent | AudioContent | EmbeddedResource | ResourceLink | OtherContent,
    Field(union_mode="left_to_right"),
]
_BLOCKS = TypeAdapter(list[ContentBlock])


def parse_blocks(content: list[Any] | None) -> list[ContentBlock]:
    """A result's `content` (wire JSON) as typed blocks."""
    return _BLOCKS.validate_python(content or [])


def is_text(block: ContentBlock) -> bool:
    """Whether the block is text the server wrote: a text block, an embedded text resource, or a resource link (its
    URI: a listing of links is data)."""
    return (
        isinstance(block, (TextContent, ResourceLink))
        or isinstance(block, EmbeddedResource)
        and "text" in block.resource
    )
