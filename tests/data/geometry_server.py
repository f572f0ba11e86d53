"""Geometry of GeoJSON texts, as mcp-geo (PyPI) serves it: tools that take a geometry as GeoJSON text, one that
takes two, and a reprojection between coordinate systems named by code; every refusal a result MCP calls a success,
an object of an error and a hint (`{"error": "Invalid GeoJSON: ...", "hint": "Check your input parameters."}`); a
catalogue whose entries show a call of each tool written as code (the codes of the systems only there); a lookup of
places by name that fails for every name (it would need the network), its result a batch of those failures; and a
bad value of the wrong kind refused with Python's words for it (`'float' object has no attribute 'get'`).

    python tests/data/geometry_server.py
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.server_fork import hand_over  # noqa: E402

hand_over()  # under pytest: run by a fork of a process that has imported the SDK (tests/server_fork.py)

from mcprl.servers import serve  # noqa: E402

SYSTEMS = ("EPSG:4326", "EPSG:3857")
EARTH = 6371008.8  # metres


def _refused(error: str) -> dict[str, str]:
    return {"error": error, "hint": "Check your input parameters."}


def _points(geojson: str) -> list[list[float]] | dict[str, str]:
    """The geometry's points, or the refusal of a text that is none."""
    try:
        geometry = json.loads(geojson)
    except ValueError as e:
        return _refused(f"Invalid GeoJSON: {e}")
    if not isinstance(geometry, dict):
        return {"error": f"'{type(geometry).__name__}' object has no attribute 'get'", "hint": "An unexpected error."}
    coordinates = geometry.get("coordinates")
    kind = geometry.get("type")
    if kind == "Point":
        return [coordinates]
    if kind == "LineString":
        return list(coordinates)
    if kind == "Polygon":
        return list(coordinates[0])
    return _refused(f"Unsupported geometry type: {kind}")


def _centre(points: list[list[float]]) -> tuple[float, float]:
    return sum(p[0] for p in points) / len(points), sum(p[1] for p in points) / len(points)


def area(geojson: str) -> Any:
    """Area of a GeoJSON geometry in square metres."""
    points = _points(geojson)
    if isinstance(points, dict):
        return points
    lat = math.radians(_centre(points)[1])
    xy = [(math.radians(x) * EARTH * math.cos(lat), math.radians(y) * EARTH) for x, y in points]
    return round(abs(sum(a[0] * b[1] - b[0] * a[1] for a, b in zip(xy, xy[1:]))) / 2, 1)


def distance(geojson_a: str, geojson_b: str) -> Any:
    """Distance in metres between the centres of two GeoJSON geometries."""
    a, b = _points(geojson_a), _points(geojson_b)
    for points in (a, b):
        if isinstance(points, dict):
            return points
    (x1, y1), (x2, y2) = _centre(a), _centre(b)  # type: ignore[arg-type]
    dx = math.radians(x2 - x1) * math.cos(math.radians((y1 + y2) / 2))
    return round(EARTH * math.hypot(dx, math.radians(y2 - y1)), 1)


def transform_crs(geojson: str, from_crs: str, to_crs: str) -> Any:
    """Reproject a GeoJSON geometry from one coordinate reference system to another."""
    points = _points(geojson)
    if isinstance(points, dict):
        return points
    for crs in (from_crs, to_crs):
        if crs not in SYSTEMS:
            return {"error": f"Invalid projection: {crs}: unknown name", "hint": "An unexpected error occurred."}
    x, y = _centre(points)
    if from_crs == to_crs:
        return {"type": "Point", "coordinates": [x, y]}
    if to_crs == "EPSG:3857":
        x, y = math.radians(x) * EARTH, math.log(math.tan(math.pi / 4 + math.radians(y) / 2)) * EARTH
    else:
        x, y = math.degrees(x / EARTH), math.degrees(2 * math.atan(math.exp(y / EARTH)) - math.pi / 2)
    return {"type": "Point", "coordinates": [round(x, 2), round(y, 2)]}


def list_all_tools() -> dict[str, Any]:
    """Return the catalogue of tools, each with an example of its use."""
    return {
        "tools": [
            {"name": "area", "example": "area(geojson=polygon)"},
            {"name": "distance", "example": "distance(geojson_a=a, geojson_b=b)"},
            {
                "name": "transform_crs",
                "example": "transform_crs(geojson=data, from_crs='EPSG:4326', to_crs='EPSG:3857')",
            },
        ]
    }


def batch_geocode(addresses: list[str]) -> dict[str, Any]:
    """Find the coordinates of several places by name."""
    results = [
        {"address": a, "index": i, "result": {"matches": {"error": "Name or service not known", "hint": "Offline."}}}
        for i, a in enumerate(addresses)
    ]
    return {"total": len(addresses), "cache_hits": 0, "results": results}


def build(seed: int = 0):
    server = serve.new_server("geometry", "Geometry of GeoJSON texts.")
    serve.add_tools(server, [area, distance, transform_crs, list_all_tools, batch_geocode])
    return server


if __name__ == "__main__":
    serve.main(build, "Geometry of GeoJSON texts.")
