"""An MCP server whose tools answer with content that is not text, over stdio (as
@modelcontextprotocol/server-everything's get-tiny-image does): an image between two text blocks, an
audio clip, a binary resource, a resource link; and one tool that answers a sentence with a number."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.server_fork import hand_over  # noqa: E402

hand_over()  # under pytest: run by a fork of a process that has imported the SDK (tests/server_fork.py)

import base64  # noqa: E402
import sys  # noqa: E402

from mcp.server.mcpserver import MCPServer  # noqa: E402
from mcp.types import AudioContent, BlobResourceContents, EmbeddedResource, ImageContent, ResourceLink, TextContent  # noqa: E402

mcp = MCPServer("media")
SIZE = int(sys.argv[1]) if len(sys.argv) > 1 else 4096  # bytes of the image: `[image/png, 4 KB]`


def _b64(n: int) -> str:
    return base64.b64encode(b"\x89PNG" + b"\0" * max(0, n - 4)).decode()


@mcp.tool()
def get_tiny_image():
    """Returns the MCP logo as a tiny PNG image."""
    return [
        TextContent(type="text", text="Here's the image you requested:"),
        ImageContent(type="image", data=_b64(SIZE), mimeType="image/png"),
        TextContent(type="text", text="The image above is the MCP logo."),
    ]


@mcp.tool()
def get_media():
    """Returns a short audio clip, a PDF and a link to a CSV file."""
    return [
        AudioContent(type="audio", data=_b64(3 * SIZE), mimeType="audio/wav"),
        EmbeddedResource(
            type="resource",
            resource=BlobResourceContents(uri="file:///a.pdf", blob=_b64(2 * SIZE), mimeType="application/pdf"),
        ),
        ResourceLink(type="resource_link", uri="file:///big.csv", name="big"),
    ]


@mcp.tool()
def get_sum(a: int, b: int) -> str:
    """Returns the sum of two numbers."""
    return f"The sum of {a} and {b} is {a + b}."


if __name__ == "__main__":
    mcp.run()
