"""The SQLite and DuckDB files of the grounding panel (docs/benchmarks.md): two small tables, `products` and
`orders`, the same rows in both.

    python bench/scenarios/make_shop.py sqlite shop.db
    python bench/scenarios/make_shop.py duckdb shop.duckdb   # with the duckdb package (mcp-server-duckdb's environment)
"""

from __future__ import annotations

import sys

PRODUCTS = [
    (1, "Steel bolt", 0.25, 120),
    (2, "Copper wire", 3.5, 40),
    (3, "Oak plank", 12.0, 15),
    (4, "Glass jar", 2.75, 60),
    (5, "Rubber seal", 0.9, 200),
]
ORDERS = [
    (1, 1, 50, "Ada", "2024-03-02"),
    (2, 3, 2, "Ben", "2024-03-05"),
    (3, 2, 10, "Ada", "2024-03-09"),
    (4, 5, 25, "Cleo", "2024-03-11"),
]
TABLES = [
    "CREATE TABLE products (id INTEGER PRIMARY KEY, name TEXT, price REAL, stock INTEGER)",
    "CREATE TABLE orders (id INTEGER PRIMARY KEY, product_id INTEGER, quantity INTEGER, customer TEXT, date TEXT)",
]


def main() -> None:
    engine, path = sys.argv[1:3]
    if engine == "sqlite":
        import sqlite3

        db = sqlite3.connect(path)
    else:
        import duckdb

        db = duckdb.connect(path)
    for statement in TABLES:
        db.execute(statement)
    db.executemany("INSERT INTO products VALUES (?, ?, ?, ?)", PRODUCTS)
    db.executemany("INSERT INTO orders VALUES (?, ?, ?, ?, ?)", ORDERS)
    db.commit()
    db.close()


if __name__ == "__main__":
    main()
